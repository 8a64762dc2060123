"""How client regex jobs wait for the workers: consumer groups' work (heartbeat checks, resolutions) apart
from ListTransactions' (which needs no ACL), at most one job per principal, a bounded queue, and a job
dropped once the connection that asked for it has closed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from odradek.coordinator.client_regex import MAX_QUEUED_JOBS, RegexMatcher
from odradek.coordinator.regex_lane import Requester
from odradek.protocol.error_codes import ErrorCode, KafkaError
from tests.unit.coordinator.costly_regex import COSTLY, LONG_NAMES

pytestmark = pytest.mark.timeout(60)

ALICE = Requester("User:alice")
MALLORY = Requester("User:mallory")


class Connection:
    """Stands for a client connection: a request's `closed` says whether it has closed."""

    def __init__(self, principal: str) -> None:
        self.is_closed = False
        self.requester = Requester(principal, lambda: self.is_closed)


def run(scenario: Callable[[RegexMatcher], Awaitable[None]]) -> None:
    async def main() -> None:
        matcher = RegexMatcher()
        matcher.limits.cpu_seconds = 60.0  # a costly job runs until the test is done with it
        try:
            await scenario(matcher)
        finally:
            matcher.close()

    asyncio.run(main())


async def running(matcher: RegexMatcher, lane: str) -> int:
    """The pid of `lane`'s worker once it is busy with a job (its CPU time moves)."""
    while (pid := getattr(matcher, lane).pid) is None:
        await asyncio.sleep(0.01)
    start = _cpu_ticks(pid)
    while _cpu_ticks(pid) == start:
        await asyncio.sleep(0.01)
    return pid


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def refused(job: Awaitable[Any]) -> KafkaError:
    with pytest.raises(KafkaError) as raised:
        await job
    return raised.value


def test_list_transactions_jobs_held_up_group_regex_checks() -> None:
    """One worker, one FIFO for every job: a member's join waited behind anonymous ListTransactions."""

    async def scenario(matcher: RegexMatcher) -> None:
        listing = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", MALLORY))
        await running(matcher, "transactions")
        await matcher.check("orders.*", "SubscribedTopicRegex", ALICE)
        assert await matcher.resolve("g", "orders.*", ["orders-eu", "payments"]) == {"orders-eu"}
        assert not listing.done()
        listing.cancel()

    run(scenario)


def test_one_principal_queued_jobs_without_bound() -> None:
    """Jobs queued without bound, each holding its request; now a principal has one job at a time (a
    connection handles one request at a time: more are other connections of the same principal), and
    a refused job is COORDINATOR_LOAD_IN_PROGRESS, which clients retry after a backoff."""

    async def scenario(matcher: RegexMatcher) -> None:
        first = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", MALLORY))
        await running(matcher, "transactions")
        again = await refused(matcher.matching("a.*", ["a"], "pattern", MALLORY))
        assert again.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        alices = asyncio.ensure_future(matcher.matching("a.*", ["a", "b"], "pattern", ALICE))
        await asyncio.sleep(0)
        assert matcher.transactions.queued == 1  # behind Mallory's, which runs
        first.cancel()
        assert await alices == ["a"]

    run(scenario)


def test_a_full_queue_refuses_the_next_job() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        first = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", MALLORY))
        await running(matcher, "transactions")
        queued = [
            asyncio.ensure_future(matcher.matching("a", ["a"], "pattern", Requester(f"User:u{i}")))
            for i in range(MAX_QUEUED_JOBS)
        ]
        await asyncio.sleep(0)
        busy = await refused(matcher.matching("a", ["a"], "pattern", ALICE))
        assert busy.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert "busy" in (busy.error_message or "")
        await matcher.check("a", "p", ALICE)  # the groups' queue is another
        first.cancel()
        assert [await job for job in queued] == [["a"]] * MAX_QUEUED_JOBS

    run(scenario)


def test_members_bringing_the_same_regex_at_once_share_one_check() -> None:
    """A group's members start together with the same subscription: one check answers them all, rather
    than one principal's second check being refused."""

    async def scenario(matcher: RegexMatcher) -> None:
        blocker = asyncio.ensure_future(matcher.resolve("other", COSTLY, LONG_NAMES))
        await running(matcher, "groups")
        checks = [asyncio.ensure_future(matcher.check("orders.*", "p", ALICE)) for _ in range(10)]
        await asyncio.sleep(0)
        assert matcher.groups.queued == 1
        blocker.cancel()
        await asyncio.gather(*checks)

    run(scenario)


def test_a_queued_job_whose_connection_closed_is_dropped_without_running() -> None:
    """Closing the connection did not abandon its job (nothing cancels a handler when its connection
    closes): connect-send-close loops queued jobs without bound."""

    async def scenario(matcher: RegexMatcher) -> None:
        first = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", MALLORY))
        await running(matcher, "transactions")
        connection = Connection("User:ANONYMOUS")
        queued = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", connection.requester))
        await asyncio.sleep(0)
        assert matcher.transactions.queued == 1
        connection.is_closed = True
        first.cancel()
        # The same principal on a new connection: the closed one's job no longer counts, nor runs.
        again = matcher.matching("b", ["a", "b"], "pattern", Requester("User:ANONYMOUS"))
        assert await asyncio.wait_for(again, 30) == ["b"]
        abandoned = await refused(queued)
        assert abandoned.error_code == ErrorCode.NETWORK_EXCEPTION
        assert matcher.transactions.queued == 0

    run(scenario)


def test_a_running_job_whose_connection_closed_stops_the_worker() -> None:
    async def scenario(matcher: RegexMatcher) -> None:
        connection = Connection("User:ANONYMOUS")
        job = asyncio.ensure_future(matcher.matching(COSTLY, LONG_NAMES, "pattern", connection.requester))
        pid = await running(matcher, "transactions")
        connection.is_closed = True
        abandoned = await refused(asyncio.wait_for(job, 30))
        assert abandoned.error_code == ErrorCode.NETWORK_EXCEPTION
        assert not Path(f"/proc/{pid}").exists()  # killed and reaped
        assert await matcher.matching("a", ["a"], "pattern", Requester("User:ANONYMOUS")) == ["a"]

    run(scenario)
