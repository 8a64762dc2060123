"""The CLIENT_METRICS subscriptions a broker holds, and what a client instance is given of them (Kafka's
ClientMetricsManager's subscription map and its instance evaluation).

An instance is given the union of the metrics of every subscription it matches ("*" alone if one of them
is "*") and their shortest interval, under a subscription id: a CRC32C of both, XORed with the instance
id's hash, as Kafka's. Each change of the set bumps its version, so the manager evaluates its instances
again at their next request.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import NamedTuple

import crc32c

from odradek.telemetry.subscriptions import (
    ALL_METRICS,
    DEFAULT_INTERVAL_MS,
    ClientAttributes,
    Subscription,
    subscription,
)


class Matched(NamedTuple):
    """What an instance is given: its attributes (with its id), metrics, interval and subscription id."""

    client: ClientAttributes
    metrics: tuple[str, ...]
    push_interval_ms: int
    subscription_id: int


class SubscriptionSet:
    def __init__(self) -> None:
        self._subscriptions: dict[str, Subscription] = {}
        #: the configs each subscription was set with, as DescribeConfigs reports them
        self._configs: dict[str, dict[str, str]] = {}
        #: bumped by every change: instances evaluated at an older version are evaluated again
        self.version = 0

    def update(self, name: str, configs: Mapping[str, str]) -> None:
        """Set a subscription (validated as Kafka's; KafkaError if not valid); no configs removes it."""
        if not configs:
            if self._subscriptions.pop(name, None) is not None:
                self._configs.pop(name, None)
                self.version += 1
            return
        self._subscriptions[name] = subscription(name, configs)
        self._configs[name] = dict(configs)
        self.version += 1

    def names(self) -> list[str]:
        return sorted(self._subscriptions)

    def configs(self, name: str) -> dict[str, str]:
        """What a subscription was set with (empty for one that does not exist)."""
        return dict(self._configs.get(name, {}))

    def match(self, instance_id: uuid.UUID, client: ClientAttributes) -> Matched:
        attributes = client._replace(client_instance_id=str(instance_id))
        metrics: set[str] = set()
        interval = DEFAULT_INTERVAL_MS
        for found in self._subscriptions.values():
            if found.matches(attributes):
                metrics |= found.metrics
                interval = min(interval, found.interval_ms)
        if ALL_METRICS in metrics:
            metrics = {ALL_METRICS}
        ordered = tuple(sorted(metrics))
        return Matched(attributes, ordered, interval, _subscription_id(ordered, interval, instance_id))


def _subscription_id(metrics: tuple[str, ...], interval_ms: int, instance_id: uuid.UUID) -> int:
    """CRC32C of the metrics (as Java prints a set) and the interval, XORed with Java's Uuid.hashCode."""
    text = ("[" + ", ".join(metrics) + "]" + str(interval_ms)).encode("utf-8")
    crc = crc32c.crc32c(text)
    bits = instance_id.int
    folded = (bits >> 64) ^ (bits & (2**64 - 1))
    hash_code = ((folded >> 32) ^ folded) & 0xFFFFFFFF
    value = crc ^ hash_code
    return value - 2**32 if value >= 2**31 else value
