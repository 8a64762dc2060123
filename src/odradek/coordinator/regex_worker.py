"""The regex worker: a process of the broker's own that compiles and matches the regexes clients send
(client_regex's WorkerLane starts it as `python -m odradek.coordinator.regex_worker <lane>`; the lane's
name is there for `ps`).

A process, not a thread: RE2 holds Python's GIL while it compiles (`\\pL{1000}` takes a tenth of a
second, a pattern of 16,384 characters a second), which in a thread would stop the broker's event
loop. Here it costs only this process's time, at the lowest CPU priority (set by the broker before this
process starts, as is its address-space limit), and the broker can kill it to drop work nobody waits
for.

It reads requests from stdin and writes replies to stdout (regex_frames); it exits at the end of stdin,
and with the broker (PR_SET_PDEATHSIG, set by the lane that starts it). Requests, each with `budget`,
the CPU seconds it may take:
- {"op": "check", "pattern": p}: {"ok": true}, or {"invalid": reason}
- {"op": "match", "pattern": p, "names": [...]}: {"matched": [indexes]}, or {"invalid": reason}
Either may be {"out_of_memory": true} (the address-space limit was reached: the worker then exits, a
fresh one takes the next job). A job past its budget ends the worker by SIGPROF, wherever it is.
A match is RE2's over the whole name (anchored at both ends), as Kafka's RE2/J `matcher(name).matches()`.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from typing import Any, Final, Protocol

import re2

from odradek.coordinator import regex_frames

#: RE2's compiled pattern without the module's cache (re2.compile keeps 128 patterns alive).
_RE2: Final[Any] = re2._re2.RE2
_WHOLE_TEXT: Final[Any] = re2._re2.RE2.Anchor.ANCHOR_BOTH
_NO_MATCH: Final = (-1, -1)
#: The shortest budget the timer takes: setitimer(0) would turn it off instead.
_LEAST_BUDGET: Final = 1e-6


class CompiledRegex(Protocol):
    """What the worker uses of RE2's compiled pattern (`re2._re2.RE2`, which has no type stubs)."""

    def ok(self) -> bool: ...

    def error(self) -> bytes: ...

    def Match(self, anchor: object, text: bytes, pos: int, endpos: int) -> Sequence[tuple[int, int]]:
        """RE2's spans of the whole match and its groups; (-1, -1) for no match."""
        ...


class Invalid(Exception):
    """RE2 refuses the pattern; the message says why."""


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the broker's terminal is the broker's
    # SIGPROF keeps its default action (the process ends): the per-job CPU timer relies on it.
    signal.signal(signal.SIGPROF, signal.SIG_DFL)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            request = regex_frames.read(requests)
            if request is None:
                return
            reply = answer(request)
        except MemoryError:  # the request itself (its names) is more than the address-space limit
            reply = {"out_of_memory": True}
        replies.write(regex_frames.encode(reply))
        replies.flush()
        if "out_of_memory" in reply:
            return  # RE2 is not written to recover from std::bad_alloc: a fresh process is safer


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """One job, within its CPU budget: ITIMER_PROF counts this process's CPU time (at the lowest
    priority a worker kept waiting has not worked) and its SIGPROF ends the process even inside RE2's
    C++ code, where neither a Python signal handler nor a check between names would run."""
    signal.setitimer(signal.ITIMER_PROF, max(float(request["budget"]), _LEAST_BUDGET))
    try:
        compiled = compile_pattern(request["pattern"])
        if request["op"] == "check":
            return {"ok": True}
        if request["op"] == "match":
            return {"matched": matching(compiled, request["names"])}
        raise ValueError(f"unknown regex worker request {request['op']!r}")
    except Invalid as error:
        return {"invalid": str(error)}
    except MemoryError:
        return {"out_of_memory": True}
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def compile_pattern(pattern: str) -> CompiledRegex:
    options = re2.Options()
    options.log_errors = False  # a client's bad pattern is its error, not a line in the broker's log
    options.never_capture = True  # whole-name matches need no submatches: RE2's fastest engines apply
    try:
        compiled: CompiledRegex = _RE2(pattern.encode("utf-8"), options)
    except UnicodeEncodeError as error:
        raise Invalid(str(error)) from None
    if not compiled.ok():
        raise Invalid(compiled.error().decode("utf-8", "replace"))
    return compiled


def matching(compiled: CompiledRegex, names: Sequence[str]) -> list[int]:
    matched = []
    for index, name in enumerate(names):
        text = name.encode("utf-8", "surrogatepass")
        if compiled.Match(_WHOLE_TEXT, text, 0, len(text))[0] != _NO_MATCH:
            matched.append(index)
    return matched


if __name__ == "__main__":
    main()
