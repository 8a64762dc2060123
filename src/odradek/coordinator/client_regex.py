"""Regular expressions that clients send: KIP-848 subscriptions (ConsumerGroupHeartbeat's
SubscribedTopicRegex) and KIP-1152's ListTransactions filter.

Kafka specifies RE2 syntax for both (it uses RE2/J) and matches a whole name
(`Pattern.matcher(name).matches()`); so does odradek, with Google's RE2. RE2 runs in time linear in
the text, yet that is text length times program size (a pattern that defeats its DFA costs up to
milliseconds per name), and compiling holds Python's GIL (a nine-character pattern can take a third of
a second). So none of it runs in the broker's process: the regex worker (regex_worker.py) does it, one
job at a time, at the lowest CPU priority, within a time budget per job. A client's regex can make
its own answer slow, never another client's. A job whose request is abandoned (its task cancelled)
is stopped by killing the worker, which is started again for the next one.

A pattern RE2 refuses (syntax RE2 lacks, such as look-arounds and back-references, or a program over
RE2's 8 MiB budget) is INVALID_REGULAR_EXPRESSION; so is one whose matching takes more CPU time than
the budget (MATCH_BUDGET_SECONDS, 5 s), or longer than MAX_PATTERN_CHARS (1 Mi), where Kafka has no
bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import odradek
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator.regex")

#: The most CPU time one request's matching may take in the worker.
MATCH_BUDGET_SECONDS: Final = 5.0
#: The longest pattern sent to the worker: past it, copying it there would hold the GIL for a noticeable
#: time, and RE2's 8 MiB program budget refuses a literal of about half this already.
MAX_PATTERN_CHARS: Final = 1 << 20
_SIZE: Final = struct.Struct(">I")
#: Where the odradek package is, for the worker's `python -m` (the broker may run from a source tree).
_PACKAGE_ROOT: Final = str(Path(odradek.__file__).resolve().parent.parent)


class RegexMatcher:
    """Compiles and matches client regexes in the regex worker process (see the module docstring).

    One thread of the broker's talks to the worker (blocking pipe I/O, outside the GIL while it waits);
    jobs queue for it, so the worker runs one at a time."""

    def __init__(self, budget_seconds: float = MATCH_BUDGET_SECONDS) -> None:
        self.budget_seconds = budget_seconds
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="regex-worker-io")
        #: Guards the worker process and which job it runs (the I/O thread and the loop both look).
        self._state = threading.Lock()
        self._worker: subprocess.Popen[bytes] | None = None
        self._running: object | None = None
        self._closed = False

    async def check(self, pattern: str, what: str) -> None:
        """Raise INVALID_REGULAR_EXPRESSION unless RE2 compiles `pattern`; `what` names it in the
        message, as Kafka's does ("SubscribedTopicRegex `x` is not a valid regular expression: ...")."""
        _check_length(pattern, what)
        reply = await self._call({"op": "check", "pattern": pattern})
        _raise_if_refused(reply, pattern, what)

    async def matching(self, pattern: str, names: Sequence[str], what: str) -> list[str]:
        """The names `pattern` matches whole, in order; INVALID_REGULAR_EXPRESSION if RE2 refuses it
        or it takes longer than the budget."""
        _check_length(pattern, what)
        request = {"op": "match", "pattern": pattern, "names": list(names), "budget": self.budget_seconds}
        reply = await self._call(request)
        _raise_if_refused(reply, pattern, what)
        return [names[index] for index in reply["matched"]]

    async def resolve(self, patterns: Collection[str], names: Sequence[str]) -> dict[str, frozenset[str]]:
        """Each pattern's matches among `names`. One RE2 refuses (checked when it came, so only a broker
        of another version could have written it) matches nothing, and is logged; past the budget,
        KafkaError (the patterns are not resolved this time)."""
        request = {"op": "resolve", "patterns": sorted(patterns), "names": list(names)}
        reply = await self._call({**request, "budget": self.budget_seconds})
        if "over_budget" in reply:
            raise KafkaError(
                ErrorCode.INVALID_REGULAR_EXPRESSION, f"matching took longer than {self.budget_seconds} s"
            )
        for pattern, reason in reply["invalid"].items():
            log.error("regex %r resolves to no topic: RE2 refuses it: %s", pattern, reason)
        resolved = {pattern: frozenset[str]() for pattern in reply["invalid"]}
        for pattern, indexes in reply["resolved"].items():
            resolved[pattern] = frozenset(names[index] for index in indexes)
        return resolved

    def close(self) -> None:
        """Stop the worker; later calls fail (the broker is stopping)."""
        with self._state:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            _stop(worker)
        self._io.shutdown(wait=False, cancel_futures=True)

    # ----- the worker ------------------------------------------------------------------------------

    async def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        job = object()
        try:
            return await asyncio.get_running_loop().run_in_executor(self._io, self._exchange, job, request)
        except asyncio.CancelledError:
            self._abandon(job)  # nobody waits for it any more: stop its work
            raise

    def _exchange(self, job: object, request: dict[str, Any]) -> dict[str, Any]:
        """In the I/O thread: send one request to the worker (started if need be), wait for its reply."""
        with self._state:
            if self._closed:
                raise RuntimeError("the regex worker is stopped")
            if self._worker is not None and self._worker.poll() is not None:
                _stop(self._worker)  # it died between two jobs: its pipes go with it
                self._worker = None
            if self._worker is None:
                self._worker = _start()
            worker = self._worker
            self._running = job
        assert worker.stdin is not None and worker.stdout is not None
        data = json.dumps(request).encode()
        try:
            worker.stdin.write(_SIZE.pack(len(data)) + data)
            worker.stdin.flush()
            header = worker.stdout.read(_SIZE.size)
            (size,) = _SIZE.unpack(header)
            body = worker.stdout.read(size)
            if len(body) < size:
                raise EOFError("the worker's reply was cut short")
            reply: dict[str, Any] = json.loads(body)
            return reply
        except (OSError, EOFError, ValueError, struct.error) as error:
            with self._state:
                abandoned = self._running is not job
                if self._worker is worker:
                    self._worker = None
            _stop(worker)
            if not abandoned:
                log.error("the regex worker failed (%s); it is started again for the next request", error)
            raise KafkaError(
                ErrorCode.UNKNOWN_SERVER_ERROR, "The regular expression could not be matched."
            ) from error
        finally:
            with self._state:
                if self._running is job:
                    self._running = None

    def _abandon(self, job: object) -> None:
        with self._state:
            if self._running is not job or self._worker is None:
                return  # not started (dropped from the queue) or over already
            self._running = None
            self._worker.kill()  # the I/O thread sees the end of its reply and lets the worker go


def _start() -> subprocess.Popen[bytes]:
    """Start the worker (from the I/O thread, which lives as long as the matcher: Linux sends the
    worker's PR_SET_PDEATHSIG when the thread that started it ends)."""
    path = os.pathsep.join(p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "odradek.coordinator.regex_worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": path},
    )


def _stop(worker: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        worker.kill()
    worker.wait()
    for stream in (worker.stdin, worker.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def _check_length(pattern: str, what: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        message = f"{what} is not a valid regular expression: longer than {MAX_PATTERN_CHARS} characters."
        raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION, message)


def _raise_if_refused(reply: dict[str, Any], pattern: str, what: str) -> None:
    if "invalid" in reply:
        reason = reply["invalid"]
    elif "over_budget" in reply:
        reason = f"matching it took longer than {reply['over_budget']} s"
    else:
        return
    raise KafkaError(
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        f"{what} `{pattern}` is not a valid regular expression: {reason}.",
    )
