"""Client quotas enforced: byte rates on Produce and Fetch, request time on every request (KIP-124).

As Kafka's ClientQuotaManager and ClientRequestQuotaManager: each quota type keeps a `Rate` per set of
metric tags (who shares the quota, see quota_entities); a request records its bytes (the Produce
request's size, the Fetch response's record bytes) or its handling time as a percentage of one second,
and a rate above the bound gets a throttle time (quota_rate). The connection then puts that time in
the response's throttle_time_ms and stops reading from the client for as long (KIP-219); a throttled
Fetch is answered without records, which are taken back off the rate.

The request quota's throttle is capped at one window, as Kafka's; the byte quotas' are not. An IP's
connection_creation_rate is checked by the acceptor for each new connection (`connection_throttle_ms`).
Inter-broker requests and followers' fetches are exempt, as Kafka exempts ClusterAction requests.
With no quota configured the connection pays one attribute check (`active`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from odradek.security.quota_entities import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    QuotaConfigs,
    QuotaEntity,
    Tags,
)
from odradek.security.quota_rate import Rate

log = logging.getLogger("odradek.quotas")

#: Kafka's principal name of an unauthenticated client (the user part of `User:ANONYMOUS`).
_PRINCIPAL_PREFIX = "User:"
#: As Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds: the rate of clients silent for an
#: hour is forgotten (so that clients with ever new ids do not grow the broker's memory), looked for
#: at most once a minute.
INACTIVE_SENSOR_EXPIRATION_MS = 3600 * 1000
_Key = TypeVar("_Key")
_SWEEP_INTERVAL_MS = 60 * 1000


@dataclass(slots=True)
class QuotaSensor:
    rate: Rate
    last_record_ms: int = 0
    #: Total throttle time given to these clients, in ms, and how many times (for the metrics).
    throttle_ms_total: int = 0
    throttled: int = 0


def _forget_inactive(sensors: dict[_Key, QuotaSensor], now_ms: int) -> None:
    """Forget the sensors nothing was recorded on for an hour (Kafka's inactive sensor expiration)."""
    expired = [
        key
        for key, sensor in sensors.items()
        if now_ms - sensor.last_record_ms >= INACTIVE_SENSOR_EXPIRATION_MS
    ]
    for key in expired:
        del sensors[key]


@dataclass(slots=True)
class ClientQuotaManager:
    """One quota type (produce, fetch or request): a rate per metric tags, checked against the bound."""

    key: str
    configs: QuotaConfigs
    samples: int
    window_ms: int
    #: Cap on a throttle time (the request quota's is one window); None: uncapped.
    max_throttle_ms: int | None = None
    sensors: dict[Tags, QuotaSensor] = field(default_factory=dict)
    _last_sweep_ms: int = 0

    @property
    def enabled(self) -> bool:
        return self.configs.has(self.key)

    def record_and_throttle_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value` for this client and return how long it must be throttled (0: not at all)."""
        tags, bound = self.configs.lookup(self.key, user, client_id)
        sensor = self.sensors.get(tags)
        if sensor is None:
            sensor = self.sensors[tags] = QuotaSensor(Rate(self.samples, self.window_ms))
        sensor.rate.record(value, now_ms)
        sensor.last_record_ms = now_ms
        if now_ms - self._last_sweep_ms >= _SWEEP_INTERVAL_MS:
            self._expire_inactive(now_ms)
        if bound is None:
            return 0
        throttle = sensor.rate.throttle_time_ms(bound, now_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        if throttle > 0:
            sensor.throttle_ms_total += throttle
            sensor.throttled += 1
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back what was recorded (a throttled fetch's bytes, which were not sent), as Kafka's
        unrecordQuotaSensor."""
        tags, _ = self.configs.lookup(self.key, user, client_id)
        sensor = self.sensors.get(tags)
        if sensor is not None:
            sensor.rate.record(-value, now_ms)

    def _expire_inactive(self, now_ms: int) -> None:
        self._last_sweep_ms = now_ms
        _forget_inactive(self.sensors, now_ms)

    def max_value_in_window(self, user: str, client_id: str) -> float | None:
        """The most a client may take in one quota window (Kafka caps a consumer's fetch to it)."""
        _, bound = self.configs.lookup(self.key, user, client_id)
        if bound is None:
            return None
        return bound * (self.samples - 1) * (self.window_ms / 1000)


class QuotaStore(Protocol):
    """Where the quotas are kept (implemented in cluster/metadata/client_quotas.py: the log dir, or
    ZooKeeper). The admin APIs read them there, not from the copy in force: in a cluster another broker
    may have changed them a moment ago, before its notification reached this one (Kafka 3.9's
    ZkAdminManager reads ZooKeeper too)."""

    async def write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quotas where they are kept (durably, before returning)."""

    async def read(self, entity: QuotaEntity) -> Mapping[str, float]: ...

    async def read_all(self) -> Mapping[QuotaEntity, Mapping[str, float]]: ...


class ClientQuotas:
    """The broker's client quotas: their configs (kept by `store`) and their enforcement."""

    def __init__(self, window_num: int, window_size_seconds: int, store: QuotaStore | None = None) -> None:
        self.configs = QuotaConfigs()
        window_ms = window_size_seconds * 1000
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, self.configs, window_num, window_ms)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, self.configs, window_num, window_ms)
        self.request = ClientQuotaManager(
            REQUEST_PERCENTAGE, self.configs, window_num, window_ms, max_throttle_ms=window_ms
        )
        #: True once any user or client-id quota is configured: the request path checks only this.
        self.active = False
        #: Each client address's connection creation rate, while an IP quota applies to it (KIP-612);
        #: forgotten after an hour of silence, as Kafka's per-IP sensors.
        self.connection_rates: dict[str, QuotaSensor] = {}
        self._connections_swept_ms = 0
        self._window_num = window_num
        self._window_ms = window_ms
        #: Where the broker keeps them (the log dir, or ZooKeeper); None: in memory only (tests).
        self.store = store
        #: Held by an admin change from its read of an entity's quotas to their write: one read while
        #: another's write is under way would undo that one (AlterClientQuotas changes keys, not all).
        self.altering = asyncio.Lock()

    async def alter(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quotas where they are kept, then in force here at once (the other
        brokers of a cluster apply them when the store's change notification reaches them)."""
        if self.store is not None:
            await self.store.write(entity, values)
        self.apply(entity, values)

    async def stored(self, entity: QuotaEntity) -> Mapping[str, float]:
        """The entity's quotas where they are kept (what the admin APIs read and change)."""
        if self.store is None:
            return self.configs.by_entity.get(entity, {})
        return await self.store.read(entity)

    async def stored_all(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        return self.configs.by_entity if self.store is None else await self.store.read_all()

    def apply(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
        """Replace the entity's quotas in force (after a change, or read at start / from ZooKeeper)."""
        before = self.configs.by_entity.get(entity, {})
        if dict(before) == dict(values):
            return
        self.configs.set(entity, values)
        self.active = any(entity.ip is None for entity in self.configs.by_entity)
        log.info("client quotas of %s: %s", entity, dict(values) or "none")

    def connection_throttle_ms(self, address: str, now_ms: int) -> int:
        """A new connection from `address` against its IP's connection_creation_rate (KIP-612): 0 to
        accept it, else how long to hold it before closing it (at most one window, as Kafka's); a
        refused connection does not count towards the rate."""
        if not self.configs.ip_rates and self.configs.default_ip_rate is None:
            return 0
        bound = self.configs.ip_rate(address)
        if bound is None:
            self.connection_rates.pop(address, None)
            return 0
        sensor = self.connection_rates.get(address)
        if sensor is None:
            sensor = self.connection_rates[address] = QuotaSensor(Rate(self._window_num, self._window_ms))
        rate = sensor.rate
        rate.record(1, now_ms)
        sensor.last_record_ms = now_ms
        if now_ms - self._connections_swept_ms >= _SWEEP_INTERVAL_MS:
            self._connections_swept_ms = now_ms
            _forget_inactive(self.connection_rates, now_ms)
        throttle = (
            self._window_ms if bound <= 0 else min(rate.throttle_time_ms(bound, now_ms), self._window_ms)
        )
        if throttle > 0:
            rate.record(-1, now_ms)
        return throttle

    @staticmethod
    def user_of(principal: str) -> str:
        """The user a quota names: the principal's name (`User:alice` is alice, anonymous ANONYMOUS)."""
        return principal[len(_PRINCIPAL_PREFIX) :] if principal.startswith(_PRINCIPAL_PREFIX) else principal


def now_ms() -> int:
    return int(time.monotonic() * 1000)
