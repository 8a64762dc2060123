"""Kafka's ControllerEventManager: one queue, one consumer, so that events are handled one at a time in
the order they happened, on the broker's event loop, never concurrently with each other."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from odradek.cluster.controller.events import ControllerEvent
from odradek.tasks.cancelling import cancel_and_wait

logger = logging.getLogger(__name__)


class ControllerEventManager:
    def __init__(self, process: Callable[[ControllerEvent], Awaitable[None]]) -> None:
        self._process = process
        self._queue: asyncio.Queue[ControllerEvent] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        #: The event being handled, for logs and tests.
        self.current: ControllerEvent | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="controller-events")

    def put(self, event: ControllerEvent) -> None:
        """Queue an event (safe from watches, which are already delivered on the loop)."""
        self._queue.put_nowait(event)

    def is_idle(self) -> bool:
        """Nothing queued and nothing being handled (tests wait for it)."""
        return self._queue.empty() and self.current is None

    def drain(self) -> list[ControllerEvent]:
        """Take every event still queued (after `stop`, so that requests among them can be answered)."""
        drained = []
        while not self._queue.empty():
            drained.append(self._queue.get_nowait())
        return drained

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            self.current = event
            try:
                await self._process(event)
            except asyncio.CancelledError:
                raise
            except Exception:
                # as Kafka's ControllerEventThread: one failing event must not stop the controller
                logger.exception("Controller failed to process event %s", event.name)
            finally:
                self.current = None
