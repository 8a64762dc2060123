"""Client regexes (KIP-848 subscriptions, ListTransactions filters): RE2 syntax, whole-name matches, in a
worker process held to a CPU budget, a memory limit and a reply deadline, and patterns that take a
backtracking engine hours done in linear time."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from odradek.coordinator.client_regex import MAX_PATTERN_CHARS, RegexMatcher
from odradek.coordinator.regex_lane import Requester
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.unit.coordinator.costly_regex import COSTLY, COSTLY_TO_COMPILE, LONG_NAMES

#: Patterns that make a backtracking engine (Python's `re`, java.util.regex) run for an exponential time
#: on a long name that almost matches.
CATASTROPHIC = ["(.*.*)*y", "(a+)+$", "(a|aa)+$", "(x+x+)+y", "(a|a?)+b", "(\\w+\\s?)+z"]
ALICE = Requester("User:alice")


def run(coroutine: object) -> object:
    async def main() -> object:
        matcher = RegexMatcher()
        try:
            return await coroutine(matcher)  # type: ignore[operator]
        finally:
            matcher.close()

    return asyncio.run(main())


async def wait_for_worker(matcher: RegexMatcher, lane: str) -> int:
    while (pid := getattr(matcher, lane).pid) is None:
        await asyncio.sleep(0.01)
    return pid


def test_a_regex_matches_whole_names_in_re2_syntax() -> None:
    names = ["orders", "orders-eu", "my-orders", "payments", "über-orders"]

    async def scenario(matcher: RegexMatcher) -> None:
        assert await matcher.matching("orders.*", names, "pattern", ALICE) == ["orders", "orders-eu"]
        assert await matcher.matching("orders", names, "pattern", ALICE) == ["orders"]  # whole, not search
        assert await matcher.matching("ü\\pL+-orders", names, "pattern", ALICE) == ["über-orders"]
        assert await matcher.matching("(?i)PAYMENTS", names, "pattern", ALICE) == ["payments"]
        assert await matcher.resolve("g", "orders.*", names) == frozenset({"orders", "orders-eu"})
        assert await matcher.resolve("g", ".*-orders", names) == frozenset({"my-orders", "über-orders"})

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
            await matcher.check(pattern, "SubscribedTopicRegex", ALICE)
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        message = raised.value.error_message or ""
        assert message.startswith(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: ")
        assert reason in message
        with pytest.raises(KafkaError):
            await matcher.matching(pattern, ["a"], "pattern", ALICE)
        with pytest.raises(KafkaError):
            await matcher.resolve("g", pattern, ["a"])

    run(scenario)


def test_a_program_over_re2s_memory_budget_is_refused() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        pattern = "(?:" + "|".join(f"[a-z]{{{n}}}" for n in range(900, 1000)) + "){30}"
        with pytest.raises(KafkaError) as raised:
            await matcher.check(pattern, "p", ALICE)
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION

    run(scenario)


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_for_backtracking_engines_match_in_linear_time(pattern: str) -> None:
    names = ["a" * 240, "x" * 240, "a" * 120 + " " + "a" * 100, "aaaa y"]

    async def scenario(matcher: RegexMatcher) -> list[str]:
        # the worker started first, outside the bound: at the lowest CPU priority on a loaded machine its
        # start alone took more than 10 s (seen in make test-fast beside a full run)
        await matcher.matching("x", ["x"], "pattern", ALICE)
        return await asyncio.wait_for(matcher.matching(pattern, names * 50, "pattern", ALICE), 60)

    matched = run(scenario)
    assert isinstance(matched, list)  # a backtracking engine would need some 2**100 steps, not 60 s


def test_the_work_is_done_in_worker_processes_at_the_lowest_cpu_priority() -> None:
    async def scenario(matcher: RegexMatcher) -> list[tuple[int, int]]:
        await matcher.check("x", "p", ALICE)  # each lane's worker exists from its first job
        await matcher.matching("x", ["x"], "p", ALICE)
        found = []
        for lane in (matcher.groups, matcher.transactions):
            assert lane.pid is not None
            stat = Path(f"/proc/{lane.pid}/stat").read_text()
            found.append((lane.pid, int(stat.rsplit(")", 1)[1].split()[16])))  # field 19: nice
        return found

    (groups, groups_nice), (transactions, transactions_nice) = run(scenario)  # type: ignore[misc]
    assert os.getpid() not in (groups, transactions) and groups != transactions
    assert groups_nice == transactions_nice == 19


def test_an_abandoned_match_stops_the_worker_and_the_next_request_gets_a_new_one() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        slow = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", ALICE))
        first = await wait_for_worker(matcher, "transactions")
        await asyncio.sleep(0.2)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert await matcher.matching("a.*", ["ab", "ba"], "pattern", ALICE) == ["ab"]
        assert matcher.transactions.pid != first  # killed, not left running a job nobody waits for
        assert not Path(f"/proc/{first}").exists()

    run(scenario)


def test_a_worker_that_dies_during_a_job_fails_that_request_and_is_started_again() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        slow = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", ALICE))
        pid = await wait_for_worker(matcher, "transactions")
        await asyncio.sleep(0.2)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(KafkaError) as raised:
            await slow
        assert raised.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        assert await matcher.matching("a.*", ["ab", "ba"], "pattern", ALICE) == ["ab"]

    run(scenario)


def test_a_worker_that_died_between_jobs_is_started_again() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        await matcher.check("x", "p", ALICE)
        pid = matcher.groups.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            await asyncio.sleep(0.01)  # dead (not yet reaped) before the next job
        await matcher.check("x", "p", ALICE)
        assert matcher.groups.pid != pid

    run(scenario)


def test_matching_over_the_budget_is_invalid_regular_expression() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        matcher.limits.cpu_seconds = 0.2
        with pytest.raises(KafkaError) as raised:
            await matcher.matching(COSTLY, LONG_NAMES, "Transaction ID pattern", ALICE)
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert "took more than 0.2 s of CPU" in (raised.value.error_message or "")
        assert await matcher.matching("a.*", ["ab"], "pattern", ALICE) == ["ab"]  # a new worker

    run(scenario)


def test_compiling_a_pattern_was_not_held_to_the_cpu_budget() -> None:
    """The budget was looked at only between names while matching: a `check` (a heartbeat bringing a
    regex) or the compile of a `match` (ListTransactions, anonymous, with no id at all) ran until RE2
    gave up: ~35 s of CPU at the old million-character cap."""

    async def scenario(matcher: RegexMatcher) -> None:
        matcher.limits.cpu_seconds = 0.05
        for refused in (
            matcher.check(COSTLY_TO_COMPILE, "SubscribedTopicRegex", ALICE),
            matcher.matching(COSTLY_TO_COMPILE, [], "Transaction ID pattern", ALICE),
        ):
            with pytest.raises(KafkaError) as raised:
                await refused
            assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
            assert "took more than 0.05 s of CPU" in (raised.value.error_message or "")

    run(scenario)


def test_compiling_a_pattern_was_not_held_to_a_memory_limit() -> None:
    """RE2's max_mem bounds the compiled program, not the parse: each \\pL held ~31 KiB while parsing,
    60,000 of them 1.85 GiB, and std::bad_alloc (MemoryError) ended the worker: UNKNOWN_SERVER_ERROR.
    With the worker's address space limited, running out of it is the pattern's fault."""

    async def scenario(matcher: RegexMatcher) -> None:
        matcher.limits.memory_bytes = 96 << 20  # the pattern needs ~190 MiB
        with pytest.raises(KafkaError) as raised:
            await matcher.check(COSTLY_TO_COMPILE, "SubscribedTopicRegex", ALICE)
        assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert "needs more than 96 MiB" in (raised.value.error_message or "")
        await matcher.check("orders.*", "SubscribedTopicRegex", ALICE)  # the worker serves on

    run(scenario)


def test_a_stopped_worker_hung_every_later_regex() -> None:
    """No deadline on the worker's reply: a worker that stopped answering (SIGSTOP here) blocked every
    later regex for ever. Past the deadline it is killed, the request fails, the next gets a new one."""

    async def scenario(matcher: RegexMatcher) -> None:
        matcher.limits.reply_deadline_seconds = 1.0
        await matcher.check("x", "p", ALICE)
        stopped = matcher.groups.pid
        assert stopped is not None
        os.kill(stopped, signal.SIGSTOP)
        with pytest.raises(KafkaError) as raised:
            await asyncio.wait_for(matcher.check("orders.*", "p", ALICE), 20)
        assert raised.value.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        await asyncio.wait_for(matcher.check("orders.*", "p", ALICE), 20)
        assert matcher.groups.pid != stopped
        assert not Path(f"/proc/{stopped}").exists()

    run(scenario)


def test_a_pattern_over_16384_characters_is_refused_without_copying_it_to_the_worker() -> None:
    """The cap was a million characters, where compiling took ~35 s and ~11 GiB; real subscriptions
    and filters are far shorter (a union of a hundred topic names is a few thousand characters)."""
    assert MAX_PATTERN_CHARS == 16384

    async def scenario(matcher: RegexMatcher) -> None:
        for refused in (
            matcher.check("a" * (MAX_PATTERN_CHARS + 1), "SubscribedTopicRegex", ALICE),
            matcher.matching("a" * (MAX_PATTERN_CHARS + 1), ["a"], "SubscribedTopicRegex", ALICE),
        ):
            with pytest.raises(KafkaError) as raised:
                await refused
            assert raised.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
            assert "longer than 16384 characters" in (raised.value.error_message or "")
        assert matcher.groups.pid is None and matcher.transactions.pid is None
        await matcher.check("a" * MAX_PATTERN_CHARS, "SubscribedTopicRegex", ALICE)

    run(scenario)
