"""A client instance of KIP-714 (Kafka's ClientMetricsInstance): what it was given of the subscriptions,
when it last asked and pushed, and the points of its latest push."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Final

from odradek.protocol.error_codes import ErrorCode
from odradek.telemetry.otlp import MetricPoint
from odradek.telemetry.subscriptions import ClientAttributes

#: An instance not heard from for three push intervals, or this long if longer, is dropped (as Kafka).
MIN_EXPIRY_MS: Final = 60_000
#: What a kept object costs besides its strings, roughly (for the manager's byte bounds).
OVERHEAD: Final = 200
#: The connection id of a call that came on no connection (the broker numbers its connections from 1).
NO_CONNECTION: Final = 0


@dataclass(slots=True)
class ClientInstance:
    client_instance_id: uuid.UUID
    client: ClientAttributes
    subscription_id: int
    #: the subscriptions' version this instance was evaluated at (re-evaluated when it changes)
    version: int
    metrics: tuple[str, ...]
    push_interval_ms: int
    last_get_ms: int = -1
    last_push_ms: int = -1
    last_seen_ms: int = 0
    terminating: bool = False
    #: the connection it was made (or last evaluated) on: it goes when that connection closes
    connection_id: int = NO_CONNECTION
    #: how its latest push was answered: after some refusals it may ask for its subscription at once
    last_error: ErrorCode = ErrorCode.NONE
    #: the data points of its latest push
    points: tuple[MetricPoint, ...] = field(default=())

    @property
    def size(self) -> int:
        """Roughly what it holds, its points aside (for the manager's byte bound)."""
        strings = [value for value in self.client if isinstance(value, str)]
        return OVERHEAD + sum(map(len, strings)) + sum(map(len, self.metrics))

    @property
    def expires_at_ms(self) -> int:
        return self.last_seen_ms + max(MIN_EXPIRY_MS, 3 * self.push_interval_ms)

    def take_get(self, now_ms: int) -> bool:
        """Whether a GetTelemetrySubscriptions now respects the push interval (and record it if so)."""
        last = max(self.last_get_ms, self.last_push_ms)
        if last >= 0 and now_ms - last < self.push_interval_ms:
            return False
        self.last_get_ms = now_ms
        return True

    def take_push(self, now_ms: int) -> bool:
        """Whether a push now respects the interval. The first push after a Get is always taken: a
        client jitters its interval (0.5 to 1.5 times it), as Kafka allows for."""
        accepted = self.last_get_ms > self.last_push_ms or now_ms - self.last_push_ms >= self.push_interval_ms
        if accepted:
            self.last_push_ms = now_ms
        return accepted


def point_size(point: MetricPoint) -> int:
    """Roughly what a kept point holds (for the manager's byte bound)."""
    return OVERHEAD + len(point.name) + sum(len(key) + len(value) for key, value in point.attributes)
