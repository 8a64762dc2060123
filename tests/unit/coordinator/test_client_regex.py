"""Client regexes (KIP-848 subscriptions, ListTransactions filters): RE2 syntax, whole-name matches, in a
worker thread, and patterns that take a backtracking engine hours done in linear time."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from odradek.coordinator.client_regex import RegexMatcher
from odradek.protocol.error_codes import ErrorCode, KafkaError

#: Patterns that make a backtracking engine (Python's `re`, java.util.regex) run for an exponential time
#: on a long name that almost matches.
CATASTROPHIC = ["(.*.*)*y", "(a+)+$", "(a|aa)+$", "(x+x+)+y", "(a|a?)+b", "(\\w+\\s?)+z"]


def run(coroutine: object) -> object:
    async def main() -> object:
        matcher = RegexMatcher()
        try:
            return await coroutine(matcher)  # type: ignore[operator]
        finally:
            matcher.close()

    return asyncio.run(main())


def test_a_regex_matches_whole_names_in_re2_syntax() -> None:
    names = ["orders", "orders-eu", "my-orders", "payments", "über-orders"]

    async def scenario(matcher: RegexMatcher) -> None:
        assert await matcher.matching("orders.*", names, "pattern") == ["orders", "orders-eu"]
        assert await matcher.matching("orders", names, "pattern") == ["orders"]  # whole name, not search
        assert await matcher.matching("ü\\pL+-orders", names, "pattern") == ["über-orders"]
        assert await matcher.matching("(?i)PAYMENTS", names, "pattern") == ["payments"]
        resolved = await matcher.resolve(["orders.*", ".*-orders"], names)
        assert resolved == {
            "orders.*": frozenset({"orders", "orders-eu"}),
            ".*-orders": frozenset({"my-orders", "über-orders"}),
        }

    run(scenario)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?=orders)", "invalid perl operator"),  # look-ahead: not RE2
        ("(a)\\1", "invalid escape sequence"),  # back-reference: not RE2
        ("[a-", "missing ]"),
        ("a{1001}", "invalid repetition size"),
        ("(?:a{1000}){1000}", "invalid repetition size"),
    ],
)
def test_what_re2_refuses_is_invalid_regular_expression(pattern: str, reason: str) -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        with pytest.raises(KafkaError) as raised:
            await matcher.check(pattern, "SubscribedTopicRegex")
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        message = raised.value.error_message or ""
        assert message.startswith(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: ")
        assert reason in message
        with pytest.raises(KafkaError):
            await matcher.matching(pattern, ["a"], "pattern")

    run(scenario)


def test_a_program_over_re2s_memory_budget_is_refused() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        with pytest.raises(KafkaError) as raised:
            await matcher.check("(?:" + "|".join(f"[a-z]{{{n}}}" for n in range(900, 1000)) + "){30}", "p")
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION

    run(scenario)


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_for_backtracking_engines_match_in_linear_time(pattern: str) -> None:
    names = ["a" * 240, "x" * 240, "a" * 120 + " " + "a" * 100, "aaaa y"]

    async def scenario(matcher: RegexMatcher) -> list[str]:
        return await asyncio.wait_for(matcher.matching(pattern, names * 50, "pattern"), 10)

    matched = run(scenario)
    assert isinstance(matched, list)  # a backtracking engine would not have answered in 10 s


def test_the_worker_runs_at_the_lowest_cpu_priority() -> None:
    async def scenario(matcher: RegexMatcher) -> int:
        loop = asyncio.get_running_loop()
        await matcher.check("x", "p")  # the worker thread exists from the first job
        return await loop.run_in_executor(
            matcher._worker, lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        )

    assert run(scenario) == 19
