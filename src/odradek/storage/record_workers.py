"""Threads of their own for the record work that would hold the event loop: rewriting produced batches
in their topic's codec, walking the records a topic's rules read (keys, timestamps), converting old
producers' message sets up and old consumers' reads down (see ``prepared_appends`` and
``down_conversion``). Every connection's work waits for these threads, never the threads that
flushes, cleaning and ZooKeeper calls run in, and they bound what is held at once (one job's buffers
per thread).

Fairness: jobs wait in one queue per owner (a client connection), and the threads take the owners in
turn, an owner running at most ``workers - 1`` jobs at once (one with a single thread): one client's
long rewrites leave a thread to every other client, whose small produce is served as soon as a
thread is free, not after everything queued before it. A request makes one job per partition.

Stopping: ``shutdown`` fails the queued jobs with WorkStopped at once, and a running job stops at its
next ``checkpoint`` (between two chunks of a codec, or a few thousand records of a walk), so a broker
told to stop does not wait for the rewrites under way. ``abandon`` does the same for the jobs of a
request nobody waits for any more (its connection closed).
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

#: Threads doing record work at once: a bound on the memory their jobs hold (a batch decompressed,
#: and what it becomes), and on the cores they take from the event loop.
WORKERS = 2

#: What a job calls between steps of its work; it raises WorkStopped when the job must end.
Checkpoint = Callable[[], None]


class WorkStopped(Exception):
    """The workers were shut down, or the job abandoned, before it ended."""


@dataclass(eq=False)
class RecordJob(Generic[T]):
    """One job: ``work`` is called in a worker thread with the job's checkpoint."""

    owner: Hashable
    work: Callable[[Checkpoint], T]
    future: Future[T] = field(default_factory=Future)
    abandoned: bool = False


class RecordWorkers:
    """The threads and their queues; threads start with the first job."""

    def __init__(self, workers: int = WORKERS) -> None:
        self._workers = workers
        self._per_owner = max(1, workers - 1)
        self._lock = threading.Condition()
        self._queues: dict[Hashable, deque[RecordJob[object]]] = {}
        #: Owners with queued jobs, in the order they get their next turn.
        self._turns: deque[Hashable] = deque()
        self._running: Counter[Hashable] = Counter()
        self._threads: list[threading.Thread] = []
        self._stopped = False

    def submit(self, owner: Hashable, work: Callable[[Checkpoint], T]) -> RecordJob[T]:
        """Queue ``work`` for ``owner``; its result (or exception) comes in the job's future."""
        job: RecordJob[T] = RecordJob(owner, work)
        with self._lock:
            if self._stopped:
                job.future.set_exception(WorkStopped("the broker is stopping"))
                return job
            queue = self._queues.get(owner)
            if queue is None:
                queue = self._queues[owner] = deque()
                self._turns.append(owner)
            queue.append(job)  # type: ignore[arg-type]
            if len(self._threads) < self._workers:
                self._start_thread()
            self._lock.notify()
        return job

    def abandon(self, job: RecordJob[T]) -> None:
        """Nobody waits for ``job`` any more: dropped if queued, stopped at its next checkpoint."""
        job.abandoned = True
        job.future.cancel()

    def shutdown(self) -> None:
        """Fail the queued jobs with WorkStopped and stop the running ones at their next checkpoint."""
        with self._lock:
            self._stopped = True
            queued = [job for queue in self._queues.values() for job in queue]
            self._queues.clear()
            self._turns.clear()
            self._lock.notify_all()
        for job in queued:
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(WorkStopped("the broker is stopping"))

    # -- the threads -----------------------------------------------------------------------------

    def _start_thread(self) -> None:
        thread = threading.Thread(target=self._run, name=f"odradek-records-{len(self._threads)}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                job = self._next_job()
                while job is None:
                    if self._stopped:
                        return
                    self._lock.wait()
                    job = self._next_job()
                self._running[job.owner] += 1
            try:
                self._execute(job)
            finally:
                with self._lock:
                    self._running[job.owner] -= 1
                    if not self._running[job.owner]:
                        del self._running[job.owner]
                    self._lock.notify_all()

    def _next_job(self) -> RecordJob[object] | None:
        """The first queued job of the first owner in turn below its share of threads (lock held)."""
        for _ in range(len(self._turns)):
            owner = self._turns.popleft()
            queue = self._queues[owner]
            if self._running[owner] >= self._per_owner:
                self._turns.append(owner)
                continue
            job = queue.popleft()
            if queue:
                self._turns.append(owner)  # its next job waits for the others' turns
            else:
                del self._queues[owner]
            return job
        return None

    def _execute(self, job: RecordJob[object]) -> None:
        if not job.future.set_running_or_notify_cancel():
            return  # abandoned while queued

        def checkpoint() -> None:
            if self._stopped:
                raise WorkStopped("the broker is stopping")
            if job.abandoned:
                raise WorkStopped("nobody waits for this work any more")

        try:
            result = job.work(checkpoint)
        except BaseException as error:  # the waiting handler gets it, whatever it is
            job.future.set_exception(error)
        else:
            job.future.set_result(result)
