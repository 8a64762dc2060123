"""Client regexes (KIP-848 subscriptions, ListTransactions filters): RE2 syntax, whole-name matches, in a
worker thread, and patterns that take a backtracking engine hours done in linear time."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from odradek.coordinator.client_regex import MAX_PATTERN_CHARS, RegexMatcher
from odradek.protocol.error_codes import ErrorCode, KafkaError

#: Patterns that make a backtracking engine (Python's `re`, java.util.regex) run for an exponential time
#: on a long name that almost matches.
CATASTROPHIC = ["(.*.*)*y", "(a+)+$", "(a|aa)+$", "(x+x+)+y", "(a|a?)+b", "(\\w+\\s?)+z"]
#: Costly for RE2 itself: its DFA gives up and its NFA takes milliseconds per long name.
COSTLY = "(?:[ab]*a[ab]{30}|[ab]*b[ab]{30}){10}"


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


def test_the_work_is_done_in_a_worker_process_at_the_lowest_cpu_priority() -> None:
    async def scenario(matcher: RegexMatcher) -> tuple[int, int]:
        await matcher.check("x", "p")  # the worker exists from the first job
        assert matcher._worker is not None
        stat = Path(f"/proc/{matcher._worker.pid}/stat").read_text()
        return matcher._worker.pid, int(stat.rsplit(")", 1)[1].split()[16])  # field 19: nice

    pid, nice = run(scenario)
    assert pid != os.getpid() and nice == 19


def test_an_abandoned_match_stops_the_worker_and_the_next_request_gets_a_new_one() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        slow = asyncio.ensure_future(matcher.matching(COSTLY, ["ab" * 100_000] * 1000, "pattern"))
        while matcher._worker is None:
            await asyncio.sleep(0.01)
        first = matcher._worker
        await asyncio.sleep(0.2)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert await asyncio.to_thread(first.wait) != 0  # killed, not left running a job nobody waits for
        assert await matcher.matching("a.*", ["ab", "ba"], "pattern") == ["ab"]
        assert matcher._worker is not first

    run(scenario)


def test_a_worker_that_dies_during_a_job_fails_that_request_and_is_started_again() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        slow = asyncio.ensure_future(matcher.matching(COSTLY, ["ab" * 100_000] * 1000, "pattern"))
        while matcher._worker is None:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        matcher._worker.kill()
        with pytest.raises(KafkaError) as raised:
            await slow
        assert raised.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert await matcher.matching("a.*", ["ab", "ba"], "pattern") == ["ab"]

    run(scenario)


def test_a_worker_that_died_between_jobs_is_started_again() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        await matcher.check("x", "p")
        assert matcher._worker is not None
        matcher._worker.kill()
        await asyncio.to_thread(matcher._worker.wait)
        await matcher.check("x", "p")

    run(scenario)


def test_matching_over_the_budget_is_invalid_regular_expression() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        matcher.budget_seconds = 0.2
        with pytest.raises(KafkaError) as raised:
            await matcher.matching(COSTLY, ["ab" * 100_000] * 1000, "Transaction ID pattern")
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert "took longer than 0.2 s" in (raised.value.error_message or "")

    run(scenario)


def test_a_pattern_over_a_million_characters_is_refused_without_copying_it_to_the_worker() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        for call in (matcher.check, lambda p, w: matcher.matching(p, ["a"], w)):
            with pytest.raises(KafkaError) as raised:
                await call("a" * (MAX_PATTERN_CHARS + 1), "SubscribedTopicRegex")
            assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert matcher._worker is None

    run(scenario)
