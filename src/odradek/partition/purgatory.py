"""Delayed operations: fetches that wait for data are woken by appends, never by polling.

A waiting fetch registers interest in its partitions; every append calls `notify` for its partition,
which wakes the waiters of that partition so they re-read (and every high-watermark move calls `wake`).
A waiter that hears nothing sleeps until its own deadline. In a cluster, `on_append` lets the leader
move the high watermark first (Kafka's maybeIncrementLeaderHW after each append).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: Seconds the request being handled (in this connection's task) has waited in delayed operations:
#: the request quota counts handling time without them, as Kafka's request-thread time leaves out the
#: time a fetch spends in purgatory.
delayed_seconds: ContextVar[float] = ContextVar("delayed_seconds", default=0.0)


class AppendWaiter:
    __slots__ = ("future", "woken", "woken_all")

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: The partitions woken since `take_woken` last ran (a fetch of thousands re-reads only these).
        self.woken: set[Hashable] = set()
        self.woken_all = False

    def wake(self, partition: Hashable | None = None) -> None:
        """Woken for `partition`, or for all of them (None)."""
        if partition is None:
            self.woken_all = True
        else:
            self.woken.add(partition)
        if not self.future.done():
            self.future.set_result(None)

    def take_woken(self) -> set[Hashable] | None:
        """The partitions woken since the last call (None: all of them), forgotten as they are taken."""
        woken, self.woken = (None if self.woken_all else self.woken), set()
        self.woken_all = False
        return woken

    def rearm(self) -> None:
        """Ready to be woken again after a wake-up has been handled."""
        if self.future.done():
            self.future = asyncio.get_running_loop().create_future()

    async def wait(self, timeout: float) -> bool:
        """True when woken by an append, False when the timeout ran out first."""
        if timeout <= 0:
            return self.future.done()
        started = time.monotonic()
        try:
            await asyncio.wait_for(asyncio.shield(self.future), timeout)
        except TimeoutError:
            return False
        finally:
            delayed_seconds.set(delayed_seconds.get() + time.monotonic() - started)
        return True


class AppendNotifier:
    def __init__(self, on_append: Callable[[Hashable], None] | None = None) -> None:
        self.waiters: dict[Hashable, set[AppendWaiter]] = {}
        #: Called with the partition of every append before its waiters wake.
        self.on_append = on_append

    @contextmanager
    def waiting_on(self, partitions: Iterable[Hashable]) -> Iterator[AppendWaiter]:
        waiter = AppendWaiter()
        keys = list(partitions)
        for key in keys:
            self.waiters.setdefault(key, set()).add(waiter)
        try:
            yield waiter
        finally:
            for key in keys:
                waiting = self.waiters.get(key)
                if waiting is not None:
                    waiting.discard(waiter)
                    if not waiting:
                        del self.waiters[key]

    def notify(self, partition: Hashable) -> None:
        """Data was appended to `partition`."""
        if self.on_append is not None:
            self.on_append(partition)
        self.wake(partition)

    def wake(self, partition: Hashable) -> None:
        """Wake the waiters of `partition` (its high watermark moved)."""
        waiting = self.waiters.get(partition)
        if waiting:
            for waiter in list(waiting):
                waiter.wake(partition)

    def wake_all(self) -> None:
        """Wake every waiter (shutdown)."""
        for waiting in list(self.waiters.values()):
            for waiter in list(waiting):
                waiter.wake()
