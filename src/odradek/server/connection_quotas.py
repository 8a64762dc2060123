"""Connection limits, as Kafka's ConnectionQuotas: `max.connections` and `max.connection.creation.rate`
(broker-wide, and per listener as `listener.name.<listener>.<config>`), `max.connections.per.ip` and its
overrides.

At the broker-wide or listener limit, a listener's acceptor waits for a connection to close before it
admits another (the ones behind it wait in the listen backlog). Over the per-address limit, a new
connection is closed at once. Over the creation rate (counted over the last second), the acceptor
waits before admitting the next. When the broker has more than one listener, the inter-broker listener
is exempt from the broker-wide limits (Kafka protects it so replication is never locked out). Limits
are read from the live configuration, so AlterConfigs changes them for the next connection.
Over its IP's `connection_creation_rate` client quota (KIP-612, set with AlterClientQuotas), a new
connection is held unserved for the throttle time, then closed, and not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Final

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError

log = logging.getLogger("odradek.connection_quotas")

OVERRIDES: Final = "max.connections.per.ip.overrides"
CREATION_RATE: Final = "max.connection.creation.rate"
#: How often a waiting acceptor looks again at the limits (they may have been raised by AlterConfigs).
_RECHECK_SECONDS: Final = 1.0


class ConnectionQuotas:
    """Counts of open connections per listener and per client address, checked against the limits."""

    def __init__(
        self,
        current_config: Callable[[], BrokerConfig],
        listeners: list[str],
        ip_throttle: Callable[[str, int], int] | None = None,
    ) -> None:
        """`ip_throttle(address, now_ms)`: the client quotas' check of an address's
        connection_creation_rate, in ms to hold a new connection (None: never held)."""
        self.current_config = current_config
        self.listeners = listeners
        self.total = 0
        self.per_listener: Counter[str] = Counter()
        self.per_address: Counter[str] = Counter()
        #: When recent connections were admitted, broker-wide and per listener (for the creation rate).
        self._created: deque[float] = deque()
        self._created_per_listener: dict[str, deque[float]] = {name: deque() for name in listeners}
        self._slot_freed = asyncio.Event()
        self._overrides_text: str | None = None
        self._overrides: dict[str, int] = {}
        self.ip_throttle = ip_throttle
        config = current_config()
        self._per_address_overrides(config, strict=True)  # a bad override refuses start-up
        for listener in listeners:
            listener_limit(config, listener, "max.connections")
            listener_limit(config, listener, "max.connection.creation.rate")

    async def wait_for_slot(self, listener: str) -> None:
        """Return once `listener` may take one more connection."""
        while not self.slot_available(listener):
            self._slot_freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._slot_freed.wait(), _RECHECK_SECONDS)

    async def wait_for_creation_rate(self, listener: str) -> None:
        """Return once admitting a connection on `listener` keeps within max.connection.creation.rate."""
        while (delay := self.creation_delay(listener, time.monotonic())) > 0:
            await asyncio.sleep(min(delay, _RECHECK_SECONDS))

    def creation_delay(self, listener: str, now: float) -> float:
        """Seconds until one more connection fits the creation rates (0: it fits now)."""
        config = self.current_config()
        windows = [(self._created_per_listener[listener], listener_limit(config, listener, CREATION_RATE))]
        if not self.is_protected(config, listener):
            windows.append((self._created, config.max_connection_creation_rate))
        delay = 0.0
        for created, rate in windows:
            while created and created[0] <= now - 1.0:
                created.popleft()
            if rate is not None and len(created) >= rate:
                # at 0 nothing is admitted; look again later in case the rate is raised
                wait = created[len(created) - rate] + 1.0 - now if rate > 0 else _RECHECK_SECONDS
                delay = max(delay, wait)
        return delay

    def ip_throttle_ms(self, address: str) -> int:
        """How long to hold, then close, a new connection from `address` (0: admit it)."""
        if self.ip_throttle is None:
            return 0
        return self.ip_throttle(_normalized(address), int(time.monotonic() * 1000))

    def slot_available(self, listener: str) -> bool:
        config = self.current_config()
        limit = listener_limit(config, listener, "max.connections")
        if limit is not None and self.per_listener[listener] >= limit:
            return False
        return self.is_protected(config, listener) or self.total < config.max_connections

    def admit(self, listener: str, address: str) -> bool:
        """Count a new connection from `address`, or refuse it (False) over the per-address limit."""
        config = self.current_config()
        address = _normalized(address)
        limit = self._per_address_overrides(config).get(address, config.max_connections_per_ip)
        if self.per_address[address] >= limit:
            log.info(
                "rejected connection from %s: address already has the configured maximum of %d connections",
                address,
                limit,
            )
            return False
        self.per_address[address] += 1
        self.per_listener[listener] += 1
        self.total += 1
        now = time.monotonic()
        self._created.append(now)
        self._created_per_listener[listener].append(now)
        return True

    def release(self, listener: str, address: str) -> None:
        address = _normalized(address)
        self.per_address[address] -= 1
        if self.per_address[address] <= 0:
            del self.per_address[address]
        self.per_listener[listener] -= 1
        self.total -= 1
        self._slot_freed.set()

    def over_broker_limit(self) -> bool:
        """Whether the broker holds more connections than max.connections (after a protected admit)."""
        return self.total > self.current_config().max_connections

    def is_protected(self, config: BrokerConfig, listener: str) -> bool:
        return len(self.listeners) > 1 and listener == inter_broker_listener(config)

    def _per_address_overrides(self, config: BrokerConfig, strict: bool = False) -> dict[str, int]:
        text = config.max_connections_per_ip_overrides
        if text != self._overrides_text:
            try:
                self._overrides = parse_overrides(text)
            except ConfigError:
                if strict:
                    raise
                log.warning("keeping the previous %s: %r cannot be used", OVERRIDES, text)
            self._overrides_text = text
        return self._overrides


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,address:count,...` to {address: count}; host names are resolved once, here."""
    overrides: dict[str, int] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        host, _, count = entry.rpartition(":")
        host = host.strip().strip("[]")
        if not host or not count.strip().isdigit():
            raise ConfigError.invalid_value(OVERRIDES, text, f"{entry!r} is not host:count")
        try:
            address = _normalized(host) if _is_address(host) else socket.gethostbyname(host)
        except OSError as error:
            raise ConfigError.invalid_value(OVERRIDES, text, f"cannot resolve {host}: {error}") from None
        overrides[address] = int(count)
    return overrides


def listener_limit(config: BrokerConfig, listener: str, base: str) -> int | None:
    """`listener.name.<listener>.<base>` (max.connections, max.connection.creation.rate), if set."""
    name = f"listener.name.{listener.lower()}.{base}"
    value = config.listener_overrides().get(name)
    if value is None:
        return None
    try:
        limit = int(value)
    except ValueError:
        raise ConfigError.invalid_value(name, value, "Expected value to be a 32-bit integer") from None
    if limit < 0:
        raise ConfigError.invalid_value(name, value, "Value must be at least 0")
    return limit


def inter_broker_listener(config: BrokerConfig) -> str:
    name = config.inter_broker_listener_name
    return (name or config.security_inter_broker_protocol).upper()


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _normalized(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address
