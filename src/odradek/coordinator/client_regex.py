"""Regular expressions that clients send: KIP-848 subscriptions (ConsumerGroupHeartbeat's
SubscribedTopicRegex) and KIP-1152's ListTransactions filter.

Kafka specifies RE2 syntax for both (it uses RE2/J) and matches a whole name
(`Pattern.matcher(name).matches()`); so does this module, with Google's RE2. RE2 runs in time linear in
the text, yet that is text length times program size, and a pattern that defeats its DFA cache costs
up to milliseconds per name. So nothing here runs on the event loop: compiling (a pattern may be
megabytes long) and matching happen in one worker thread of the broker's, at the lowest CPU priority,
one request at a time. A client's regex can make its own answer slow, never another client's.
A pattern RE2 refuses (syntax RE2 lacks, such as look-arounds and back-references, or a program over
RE2's memory budget) is INVALID_REGULAR_EXPRESSION.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, TypeVar

import re2

from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator.regex")
T = TypeVar("T")

#: RE2's compiled pattern without the module's cache: `re2.compile` keeps the last 128 patterns alive,
#: each with up to `max_mem` of DFA memory, which clients choosing patterns could fill.
_RE2: Final[Any] = re2._re2.RE2
_WHOLE_TEXT: Final[Any] = re2._re2.RE2.Anchor.ANCHOR_BOTH
_NO_MATCH: Final = (-1, -1)
#: Names matched between two looks at whether the request is still wanted (a match takes at most
#: milliseconds, so a cancelled request stops its work promptly).
_CHECK_EVERY: Final = 64


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # a client's bad pattern is its error, not the broker's log line
    options.never_capture = True  # whole-name matches need no submatches: the fastest engines apply
    return options


class RegexMatcher:
    """Compiles and matches client regexes in a thread of its own (see the module docstring)."""

    def __init__(self) -> None:
        self._worker = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="client-regex", initializer=_lowest_priority
        )

    async def check(self, pattern: str, what: str) -> None:
        """Raise INVALID_REGULAR_EXPRESSION unless RE2 compiles `pattern`; `what` names it in the
        message, as Kafka's does ("SubscribedTopicRegex `x` is not a valid regular expression: ...")."""
        await self._run(_compile, pattern, what)

    async def matching(self, pattern: str, names: Sequence[str], what: str) -> list[str]:
        """The names `pattern` matches whole, in order; INVALID_REGULAR_EXPRESSION if RE2 refuses it."""
        stop = threading.Event()
        try:
            return await self._run(_matching, pattern, names, what, stop)
        finally:
            stop.set()  # a cancelled request's match stops at its next look

    async def resolve(self, patterns: Collection[str], names: Sequence[str]) -> dict[str, frozenset[str]]:
        """Each pattern's matches among `names`; one RE2 refuses (checked when it came, so only a
        broker of another version could have written it) matches nothing, and is logged."""
        stop = threading.Event()
        try:
            return await self._run(_resolve, patterns, names, stop)
        finally:
            stop.set()

    def close(self) -> None:
        """Stop taking work; what is queued is dropped, a match under way ends at its next look."""
        self._worker.shutdown(wait=False, cancel_futures=True)

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._worker, function, *args)


def _lowest_priority() -> None:
    """Linux gives each thread its own nice value: the worker yields the CPU to the event loop."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def _compile(pattern: str, what: str) -> Any:
    try:
        compiled = _RE2(pattern.encode("utf-8"), _options())
    except UnicodeEncodeError as error:
        raise _invalid(pattern, what, str(error)) from None
    if not compiled.ok():
        raise _invalid(pattern, what, compiled.error().decode("utf-8", "replace"))
    return compiled


def _invalid(pattern: str, what: str, reason: str) -> KafkaError:
    return KafkaError(
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        f"{what} `{pattern}` is not a valid regular expression: {reason}.",
    )


def _matching(pattern: str, names: Sequence[str], what: str, stop: threading.Event) -> list[str]:
    compiled = _compile(pattern, what)
    matched = []
    for index, name in enumerate(names):
        if index % _CHECK_EVERY == 0 and stop.is_set():
            break
        if _matches(compiled, name):
            matched.append(name)
    return matched


def _resolve(
    patterns: Collection[str], names: Sequence[str], stop: threading.Event
) -> dict[str, frozenset[str]]:
    resolved: dict[str, frozenset[str]] = {}
    for pattern in patterns:
        try:
            compiled = _compile(pattern, "SubscribedTopicRegex")
        except KafkaError as error:
            log.error("regex %r resolves to no topic: %s", pattern, error)
            resolved[pattern] = frozenset()
            continue
        found = []
        for index, name in enumerate(names):
            if index % _CHECK_EVERY == 0 and stop.is_set():
                break
            if _matches(compiled, name):
                found.append(name)
        resolved[pattern] = frozenset(found)
    return resolved


def _matches(compiled: Any, name: str) -> bool:
    text = name.encode("utf-8", "surrogatepass")
    return bool(compiled.Match(_WHOLE_TEXT, text, 0, len(text))[0] != _NO_MATCH)
