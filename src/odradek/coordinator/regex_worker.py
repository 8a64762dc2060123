"""The regex worker: a process of the broker's own that compiles and matches the regexes clients send
(client_regex.RegexMatcher starts it as `python -m odradek.coordinator.regex_worker`).

A process, not a thread: RE2 holds Python's GIL while it compiles (a nine-character pattern can take a
third of a second), which in a thread would stop the broker's event loop. Here it costs only this
process's time, at the lowest CPU priority, and the broker can kill it to drop work nobody waits for.

It reads requests from stdin and writes replies to stdout, each a 4-byte big-endian length and a JSON
object; it exits at the end of stdin, and with the broker (PR_SET_PDEATHSIG). Requests:
- {"op": "check", "pattern": p}: {"ok": true}, or {"invalid": reason}
- {"op": "match", "pattern": p, "names": [...], "budget": s}: {"matched": [indexes]}, {"invalid": reason},
  or {"over_budget": s} when matching took more than `budget` seconds of CPU
- {"op": "resolve", "patterns": [...], "names": [...], "budget": s}: {"resolved": {pattern: [indexes]},
  "invalid": {pattern: reason}}, or {"over_budget": s}
A match is RE2's over the whole name (anchored at both ends), as Kafka's RE2/J `matcher(name).matches()`.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any, BinaryIO, Final

import re2

_SIZE: Final = struct.Struct(">I")
#: RE2's compiled pattern without the module's cache (re2.compile keeps 128 patterns alive).
_RE2: Final[Any] = re2._re2.RE2
_WHOLE_TEXT: Final[Any] = re2._re2.RE2.Anchor.ANCHOR_BOTH
_NO_MATCH: Final = (-1, -1)
_PR_SET_PDEATHSIG: Final = 1


class Invalid(Exception):
    """RE2 refuses the pattern; the message says why."""


class OverBudget(Exception):
    pass


def main() -> None:
    _die_with_broker()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, 19)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the broker's terminal is the broker's
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    while True:
        request = _read(requests)
        if request is None:
            return
        reply = answer(request)
        data = json.dumps(reply).encode()
        replies.write(_SIZE.pack(len(data)) + data)
        replies.flush()


def answer(request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    try:
        if op == "check":
            compile_pattern(request["pattern"])
            return {"ok": True}
        # The budget is CPU time: a worker the machine keeps waiting (it runs at the lowest priority)
        # has not worked.
        deadline = time.process_time() + float(request["budget"])
        if op == "match":
            return {"matched": matching(compile_pattern(request["pattern"]), request["names"], deadline)}
        if op == "resolve":
            resolved: dict[str, list[int]] = {}
            invalid: dict[str, str] = {}
            for pattern in request["patterns"]:
                try:
                    resolved[pattern] = matching(compile_pattern(pattern), request["names"], deadline)
                except Invalid as error:
                    invalid[pattern] = str(error)
            return {"resolved": resolved, "invalid": invalid}
    except Invalid as error:
        return {"invalid": str(error)}
    except OverBudget:
        return {"over_budget": request["budget"]}
    raise ValueError(f"unknown regex worker request {op!r}")


def compile_pattern(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False  # a client's bad pattern is its error, not a line in the broker's log
    options.never_capture = True  # whole-name matches need no submatches: RE2's fastest engines apply
    try:
        compiled = _RE2(pattern.encode("utf-8"), options)
    except UnicodeEncodeError as error:
        raise Invalid(str(error)) from None
    if not compiled.ok():
        raise Invalid(compiled.error().decode("utf-8", "replace"))
    return compiled


def matching(compiled: Any, names: Sequence[str], deadline: float) -> list[int]:
    matched = []
    for index, name in enumerate(names):
        if time.process_time() > deadline:
            raise OverBudget
        text = name.encode("utf-8", "surrogatepass")
        if compiled.Match(_WHOLE_TEXT, text, 0, len(text))[0] != _NO_MATCH:
            matched.append(index)
    return matched


def _read(stream: BinaryIO) -> dict[str, Any] | None:
    header = stream.read(_SIZE.size)
    if len(header) < _SIZE.size:
        return None
    (size,) = _SIZE.unpack(header)
    body = stream.read(size)
    if len(body) < size:
        return None
    request: dict[str, Any] = json.loads(body)
    return request


def _die_with_broker() -> None:
    """Linux: SIGKILL when the broker dies (even by SIGKILL), so a worker is never left behind."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the broker died before the line above
        sys.exit(0)


if __name__ == "__main__":
    main()
