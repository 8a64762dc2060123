"""A regex worker process and the jobs waiting for it (client_regex.RegexMatcher keeps two lanes, so
that anonymous ListTransactions never wait in front of consumer groups' work, nor the other way round).

Jobs run one at a time, in the order they came. A lane holds at most `max_queued` jobs waiting and one
per owner (a principal, or a group's resolution): past that a job is refused at once with
COORDINATOR_LOAD_IN_PROGRESS, which Kafka's clients retry after a backoff. Identical checks share one
job (a group's members starting together with one subscription).

A job ends with the first of: the worker's reply; the worker ending (by SIGPROF: the job took more than
its CPU budget); no reply within `reply_deadline_seconds` (the worker is hung or stopped: killed,
UNKNOWN_SERVER_ERROR); or every requester gone (its task cancelled or its connection closed: the
worker is killed, its work wasted on nobody). A job queued whose requesters are gone is dropped without
running. The next job after a worker ended starts a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import resource
import select
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import odradek
from odradek.coordinator import regex_frames
from odradek.coordinator.regex_frames import Message
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.tasks.child_processes import die_with_parent

log = logging.getLogger("odradek.coordinator.regex")

#: Where the odradek package is, for the worker's `python -m` (the broker may run from a source tree).
_PACKAGE_ROOT: Final = str(Path(odradek.__file__).resolve().parent.parent)
#: How often the I/O thread looks whether the job it waits for is still wanted.
_POLL_SECONDS: Final = 0.05
_CHUNK: Final = 1 << 16


@dataclass
class WorkerLimits:
    #: The CPU time one job (compiling and matching) may take in the worker.
    cpu_seconds: float = 5.0
    #: The worker's address space (RLIMIT_AS): RE2's max_mem bounds a compiled program, not the parse
    #: of a pattern, which for \pL-like classes holds ~31 KiB per three characters.
    memory_bytes: int = 512 << 20
    #: How long the broker waits for a reply before it takes the worker for hung (a stopped or starved
    #: worker): Kafka clients' default request.timeout.ms, past which nobody waits for the answer.
    reply_deadline_seconds: float = 30.0


def _never_closed() -> bool:
    return False


@dataclass(frozen=True)
class Requester:
    """Who asks for a job: its principal (one job each at a time) and whether the connection it came
    on has closed since (then the job is dropped)."""

    principal: str
    closed: Callable[[], bool] = _never_closed


class OverBudget(Exception):
    """The job took more CPU time than its budget (the worker ended by SIGPROF)."""


class WorkerLane:
    def __init__(self, name: str, limits: WorkerLimits, max_queued: int) -> None:
        self.name = name
        self.limits = limits
        self.max_queued = max_queued
        self._queue: deque[_Job] = deque()
        self._running: _Job | None = None
        #: The thread that talks to the worker (blocking pipe I/O, outside the GIL while it waits); it
        #: lives as long as the lane, since Linux sends the worker's PR_SET_PDEATHSIG when the thread
        #: that started it ends.
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"regex-{name}")
        #: Guards the worker process (the I/O thread starts and uses it, `close` kills it).
        self._state = threading.Lock()
        self._worker: subprocess.Popen[bytes] | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        """The worker's process id; None until the first job (and after `close`)."""
        worker = self._worker
        return None if worker is None else worker.pid

    @property
    def queued(self) -> int:
        """Jobs waiting (not the one running)."""
        return len(self._queue)

    async def run(
        self, request: Message, owner: tuple[str, str], requester: Requester, shared: bool
    ) -> Message:
        """The worker's reply to `request`, asked by `requester` for `owner`; `shared`: an identical
        request waiting or running answers this one too. Raises KafkaError: COORDINATOR_LOAD_IN_PROGRESS
        (the lane is full, or `owner` has a job already), NETWORK_EXCEPTION (abandoned),
        UNKNOWN_SERVER_ERROR (the worker failed or hung); OverBudget; RuntimeError once closed."""
        if self._closed:
            raise RuntimeError("the regex worker is stopped")
        self._drop_abandoned()
        job = self._identical(request) if shared else None
        if job is None:
            has_one = any(other.owner == owner and not other.abandoned() for other in self._jobs())
            if has_one or len(self._queue) >= self.max_queued:
                raise KafkaError(
                    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    "The broker is busy with other regular expressions; retry later.",
                )
            job = _Job(request, owner, shared)
            self._queue.append(job)
        waiter = _Waiter(asyncio.get_running_loop().create_future(), requester)
        job.waiters.append(waiter)
        self._start_next()
        try:
            return await waiter.future
        except asyncio.CancelledError:
            waiter.cancelled = True
            self._drop_abandoned()  # a running job's I/O thread sees it at its next look
            raise

    def close(self) -> None:
        """Stop the worker; queued and later jobs fail with RuntimeError (the broker is stopping).
        Called on the event loop."""
        self._closed = True
        with self._state:
            worker, self._worker = self._worker, None
        if worker is not None:
            _kill(worker)
        for job in self._queue:
            job.fail(RuntimeError("the regex worker is stopped"))
        self._queue.clear()
        self._io.shutdown(wait=False, cancel_futures=True)

    # ----- scheduling (on the event loop) -----------------------------------------------------------

    def _jobs(self) -> Iterator[_Job]:
        if self._running is not None:
            yield self._running
        yield from self._queue

    def _identical(self, request: Message) -> _Job | None:
        return next(
            (j for j in self._jobs() if j.shared and j.request == request and not j.abandoned()), None
        )

    def _drop_abandoned(self) -> None:
        for job in [job for job in self._queue if job.abandoned()]:
            self._queue.remove(job)
            job.fail(_abandoned())

    def _start_next(self) -> None:
        if self._running is not None or self._closed:
            return
        self._drop_abandoned()
        if not self._queue:
            return
        job = self._running = self._queue.popleft()
        done = asyncio.get_running_loop().run_in_executor(self._io, self._exchange, job)
        done.add_done_callback(lambda finished: self._finished(job, finished))

    def _finished(self, job: _Job, finished: asyncio.Future[Message]) -> None:
        self._running = None
        if finished.cancelled():
            job.fail(RuntimeError("the regex worker is stopped"))
        elif (error := finished.exception()) is not None:
            job.fail(error)
        else:
            job.answer(finished.result())
        self._start_next()

    # ----- the worker (in the I/O thread) -----------------------------------------------------------

    def _exchange(self, job: _Job) -> Message:
        worker = self._ready_worker()
        deadline = time.monotonic() + self.limits.reply_deadline_seconds
        try:
            self._send(worker, regex_frames.encode(job.request), job, deadline)
            reply = self._receive(worker, job, deadline)
        except _Abandoned:
            self._discard(worker, kill=True)
            raise _abandoned() from None
        except _DeadlinePassed:
            self._discard(worker, kill=True)
            log.error(
                "the %s regex worker gave no reply within %s s; it is started again for the next request",
                self.name,
                self.limits.reply_deadline_seconds,
            )
            raise _failed() from None
        except (OSError, EOFError, ValueError) as error:
            status = self._discard(worker, kill=False)
            if status == -signal.SIGPROF:
                raise OverBudget from None
            if self._closed:
                raise RuntimeError("the regex worker is stopped") from None
            log.error(
                "the %s regex worker failed (%s, status %s); it is started again for the next request",
                self.name,
                error,
                status,
            )
            raise _failed() from error
        if "out_of_memory" in reply:
            self._discard(worker, kill=False)  # it exits after saying so
        return reply

    def _ready_worker(self) -> subprocess.Popen[bytes]:
        with self._state:
            if self._closed:
                raise RuntimeError("the regex worker is stopped")
            if self._worker is not None and self._worker.poll() is not None:
                _kill(self._worker)  # it died between two jobs: its pipes go with it
                self._worker = None
            if self._worker is None:
                self._worker = _start(self.name, self.limits.memory_bytes)
            return self._worker

    def _send(self, worker: subprocess.Popen[bytes], data: bytes, job: _Job, deadline: float) -> None:
        assert worker.stdin is not None
        fd = worker.stdin.fileno()
        sent = 0
        while sent < len(data):
            _wait(fd, select.POLLOUT, job, deadline)
            with contextlib.suppress(BlockingIOError):
                sent += os.write(fd, data[sent : sent + _CHUNK])

    def _receive(self, worker: subprocess.Popen[bytes], job: _Job, deadline: float) -> Message:
        assert worker.stdout is not None
        fd = worker.stdout.fileno()
        reader = regex_frames.MessageReader()
        while True:
            _wait(fd, select.POLLIN, job, deadline)
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError("the worker's reply was cut short")
            reply = reader.feed(chunk)
            if reply is not None:
                return reply

    def _discard(self, worker: subprocess.Popen[bytes], kill: bool) -> int:
        """Let `worker` go (the next job starts another); its exit status."""
        with self._state:
            if self._worker is worker:
                self._worker = None
        if not kill:
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(1.0)  # it closed its stdout as it ended: its status follows at once
        return _kill(worker)


@dataclass(eq=False)
class _Waiter:
    future: asyncio.Future[Message]
    requester: Requester
    #: Its task was cancelled (set on the event loop; read by the I/O thread too).
    cancelled: bool = False

    def gone(self) -> bool:
        return self.cancelled or self.future.done() or self.requester.closed()


@dataclass(eq=False)
class _Job:
    request: Message
    owner: tuple[str, str]
    shared: bool
    waiters: list[_Waiter] = field(default_factory=list)

    def abandoned(self) -> bool:
        """Nobody waits for it any more (the I/O thread asks too: the waiters are read as a copy)."""
        return all(waiter.gone() for waiter in tuple(self.waiters))

    def answer(self, reply: Message) -> None:
        for waiter in self.waiters:
            if not waiter.future.done():
                waiter.future.set_result(reply)

    def fail(self, error: BaseException) -> None:
        for waiter in self.waiters:
            if not waiter.future.done():
                waiter.future.set_exception(error)


class _Abandoned(Exception):
    pass


class _DeadlinePassed(Exception):
    pass


def _abandoned() -> KafkaError:
    return KafkaError(ErrorCode.NETWORK_EXCEPTION, "The request was abandoned: its connection closed.")


def _failed() -> KafkaError:
    return KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "The regular expression could not be matched.")


def _wait(fd: int, event: int, job: _Job, deadline: float) -> None:
    """Until `fd` is ready for `event` (or hung up); raises once the job is abandoned or past its
    deadline."""
    poller = select.poll()
    poller.register(fd, event)
    while not poller.poll(_POLL_SECONDS * 1000):
        if job.abandoned():
            raise _Abandoned
        if time.monotonic() > deadline:
            raise _DeadlinePassed


def _start(name: str, memory_bytes: int) -> subprocess.Popen[bytes]:
    path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    dying = die_with_parent(signal.SIGKILL)  # a worker never outlives the broker, even one SIGKILLed
    worker = subprocess.Popen(
        [sys.executable, "-m", "odradek.coordinator.regex_worker", name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        bufsize=0,
        env={**os.environ, "PYTHONPATH": path},
        preexec_fn=lambda: _limit_worker(memory_bytes, dying),
    )
    assert worker.stdin is not None and worker.stdout is not None
    os.set_blocking(worker.stdin.fileno(), False)
    os.set_blocking(worker.stdout.fileno(), False)
    return worker


def _limit_worker(memory_bytes: int, dying: Callable[[], None]) -> None:
    """In the worker's process before it runs Python (so before RE2 is loaded): the lowest CPU
    priority, its address space limited (a std::bad_alloc in RE2 is then MemoryError), and its death
    with the broker (`dying`)."""
    dying()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _kill(worker: subprocess.Popen[bytes]) -> int:
    with contextlib.suppress(ProcessLookupError):
        worker.kill()
    status = worker.wait()
    for stream in (worker.stdin, worker.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return status
