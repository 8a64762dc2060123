"""A reaction to ZooKeeper notifications run one pass at a time on the loop: a notification that comes
during a pass asks for one more pass after it (its change is read then), never a second pass at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class CoalescedPasses:
    def __init__(self, work: Callable[[], Awaitable[None]], what: str) -> None:
        self._work = work
        self._what = what
        self._running: asyncio.Task[None] | None = None
        self._again = False

    def trigger(self) -> None:
        """On the loop: run a pass now, or once more after the one under way."""
        if self._running is not None and not self._running.done():
            self._again = True
            return
        self._running = asyncio.get_running_loop().create_task(self._passes())

    async def _passes(self) -> None:
        while True:
            self._again = False
            try:
                await self._work()
            except Exception:  # ZooKeeper unreachable for long: the next notification reads again
                log.exception("reading %s failed", self._what)
            if not self._again:
                return
