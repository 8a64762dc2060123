"""Keyed timers on the broker's event loop: session expiry, join and sync deadlines, rebalance timeouts.

A timer is a `loop.call_later` handle under a key ("heartbeat-<group>-<member>", "join-<group>" ...);
scheduling a key again replaces the earlier timer, as Kafka's coordinator timer does. When one fires,
its operation runs through the coordinator like a request would, so the records it returns are
appended before anything else happens. Nothing polls: an idle group costs no wake-ups.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("odradek.coordinator.timer")

Operation = Callable[[], Any]
Runner = Callable[[str, Operation], None]


class CoordinatorTimer:
    def __init__(self, runner: Runner, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._runner = runner
        self._loop = loop
        self._handles: dict[str, asyncio.TimerHandle] = {}

    def schedule(self, key: str, delay_ms: float, operation: Operation) -> None:
        """Run `operation` after `delay_ms`, replacing any timer already under `key`."""
        self.cancel(key)
        loop = self._loop or asyncio.get_running_loop()
        self._handles[key] = loop.call_later(max(delay_ms, 0) / 1000, self._fire, key, operation)

    def cancel(self, key: str) -> None:
        handle = self._handles.pop(key, None)
        if handle is not None:
            handle.cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._handles

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def __len__(self) -> int:
        return len(self._handles)

    def _fire(self, key: str, operation: Operation) -> None:
        self._handles.pop(key, None)
        try:
            self._runner(key, operation)
        except Exception:
            log.exception("coordinator timer %s failed", key)
