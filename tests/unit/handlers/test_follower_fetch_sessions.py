"""A follower fetches in a fetch session (KIP-227): a real ReplicaFetcher (broker 3) replicating from a
real leader's Fetch handler (broker 2, in process). After one full fetch its fetches name only the
partitions whose position moved, the leader answers only those with news, and the data and the high
watermarks still arrive whole; a session the leader lost, or a partition added, starts a new one."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.replication.fetch_session import FollowerFetchSession
from odradek.cluster.replication.fetch_state import FetcherContext, FetchState
from odradek.cluster.replication.replica_fetcher import ReplicaFetcher
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.protocol.messages.fetch import FetchRequest
from odradek.storage.config import LogConfig
from odradek.storage.flush_scheduler import FlushScheduler
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.followers import follower_appends, host
from tests.support.handler_services import HandlerBroker
from tests.unit.cluster.test_replica_fetcher import SETTINGS as FETCHER_SETTINGS
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, produce_request

PARTITIONS = 4
SETTINGS = dataclasses.replace(FETCHER_SETTINGS, fetch_wait_max_ms=50, fetch_backoff_ms=50)


@dataclass
class Sent:
    session_id: int
    epoch: int
    named: set[int]
    forgotten: int


class InProcessLeader:
    """The follower's connection to broker 2: each Fetch goes through the leader's handler and codec."""

    connected = True

    def __init__(self, leader: HandlerBroker) -> None:
        self.leader = leader
        self.sent: list[Sent] = []

    async def send(self, request: FetchRequest, version: int) -> Any:
        named = {p.partition for t in request.topics for p in t.partitions}
        forgotten = sum(len(t.partitions) for t in request.forgotten_topics_data)
        self.sent.append(Sent(request.session_id, request.session_epoch, named, forgotten))
        return await self.leader.call_over_wire(request, version, "INTERNAL")

    def close(self) -> None:
        pass


@pytest.fixture
def follower_logs(tmp_path: Path) -> Iterator[LogManager]:
    manager = LogManager([tmp_path / "follower"], LogConfig.from_mapping({}), strays=JudgedByLeaderAndIsr())
    manager.startup()
    try:
        yield manager
    finally:
        manager.shutdown()


async def _lead(leader: HandlerBroker) -> None:
    """Broker 2 leads orders 0-3 at epoch 3, broker 3 in the ISR with it."""
    led = [
        Partition(TOPIC, i, leader=2, leader_epoch=3, replicas=[2, 3], isr=[2, 3]) for i in range(PARTITIONS)
    ]
    await leader.call(update_metadata(BROKERS, led, {TOPIC: TOPIC_ID}), 8)
    await leader.call(leader_and_isr(led, {TOPIC: TOPIC_ID}), 7)


async def _produce(leader: HandlerBroker, index: int, count: int = 1) -> None:
    for _ in range(count):
        await leader.call(produce_request(index), 9)


def _follow(logs: LogManager, index: int) -> FetchState:
    return FetchState(TOPIC, index, TOPIC_ID, leader_epoch=3, log=logs.get_or_create_log(TOPIC, index))


async def _until(check: Any, what: str) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.01)
    assert check(), what


def _caught_up(leader: HandlerBroker, logs: LogManager, indexes: Iterable[int]) -> bool:
    """Every partition's records and high watermark on the follower as on the leader."""
    for index in indexes:
        theirs, ours = leader.logs.get_log(TOPIC, index), logs.get_log(TOPIC, index)
        if theirs is None or ours is None:
            return False
        if (ours.log_end_offset, ours.high_watermark) != (theirs.log_end_offset, theirs.log_end_offset):
            return False
    return True


@contextlib.asynccontextmanager
async def _following(
    connection: InProcessLeader, logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ReplicaFetcher]:
    """Broker 3's fetcher from broker 2 over `connection`, stopped on the way out."""
    context = FetcherContext(
        node_id=3,
        broker_epoch=lambda: 1,
        endpoint=lambda _: None,
        local_host=None,
        # no power loss here: truncations wait for nothing (test_truncation_checkpoints.py)
        followers=follower_appends(logs, 3, TruncationCheckpoints(FlushScheduler([], {}))),
    )
    fetcher = ReplicaFetcher("fetcher-2", 2, SETTINGS, context)

    async def connect() -> Any:
        return connection

    monkeypatch.setattr(fetcher, "_connect", connect)
    try:
        yield fetcher
    finally:
        fetcher.task.cancel()
        await asyncio.gather(fetcher.task, return_exceptions=True)


async def test_after_one_full_fetch_a_follower_names_only_the_partitions_that_moved(
    replicated_member: HandlerBroker, follower_logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = replicated_member
    await _lead(leader)
    await _produce(leader, 0, 3)
    await _produce(leader, 2, 2)
    connection = InProcessLeader(leader)
    async with _following(connection, follower_logs, monkeypatch) as fetcher:
        for index in range(PARTITIONS):
            fetcher.add(host(fetcher, _follow(follower_logs, index)))
        await _until(lambda: _caught_up(leader, follower_logs, range(PARTITIONS)), "the follower caught up")
        (session,) = leader.services.fetch_sessions.sessions.values()
        assert session.privileged and len(session.partitions) == PARTITIONS
        full = [s for s in connection.sent if s.epoch == 0]
        assert full and all(s.named == set(range(PARTITIONS)) for s in full)
        incremental = [s for s in connection.sent if s.epoch > 0]
        assert incremental and all(s.session_id == session.session_id for s in incremental)
        # the fetches after the records came name only partitions 0 and 2, then none
        assert all(s.named <= {0, 2} for s in incremental)
        await _until(lambda: connection.sent[-1].named == set(), "an idle fetch naming no partition")
        assert connection.sent[-1].session_id == session.session_id

        before = len(connection.sent)
        await _produce(leader, 1, 4)
        await _until(lambda: _caught_up(leader, follower_logs, range(PARTITIONS)), "partition 1 replicated")
        later = connection.sent[before:]
        assert all(s.epoch > 0 and s.named <= {1} for s in later)
        assert any(s.named == {1} for s in later)


async def test_a_session_the_leader_lost_or_a_partition_added_starts_a_new_session(
    replicated_member: HandlerBroker, follower_logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    leader = replicated_member
    await _lead(leader)
    await _produce(leader, 0, 2)
    connection = InProcessLeader(leader)
    async with _following(connection, follower_logs, monkeypatch) as fetcher:
        fetcher.add(host(fetcher, _follow(follower_logs, 0)))
        await _until(lambda: _caught_up(leader, follower_logs, range(1)), "partition 0 replicated")
        (first,) = leader.services.fetch_sessions.sessions
        leader.services.fetch_sessions.close(first)  # evicted, or the leader restarted
        await _produce(leader, 0, 2)
        await _until(lambda: _caught_up(leader, follower_logs, range(1)), "replicated in a new session")
        (second,) = leader.services.fetch_sessions.sessions
        assert second != first
        opened = [s for s in connection.sent if s.epoch == 0]
        assert [s.session_id for s in opened][-1] == 0  # the lost session is not named again

        fetcher.add(host(fetcher, _follow(follower_logs, 3)))
        await _produce(leader, 3, 2)
        await _until(lambda: _caught_up(leader, follower_logs, (0, 3)), "partition 3 replicated")
        (third,) = leader.services.fetch_sessions.sessions.values()
        assert set(key[2] for key in third.partitions) == {0, 3}
        assert connection.sent[-1].session_id == third.session_id


def test_a_new_session_starts_whenever_the_partitions_or_the_version_change() -> None:
    @dataclass(frozen=True)
    class Followed:
        key: tuple[str, int]

    a, b = Followed(("t", 0)), Followed(("t", 1))
    session: FollowerFetchSession[Followed] = FollowerFetchSession()
    first = session.plan([(a, (0, 0, -1)), (b, (0, 0, -1))], 17)
    assert (first.full, first.session_id, first.epoch, first.named) == (True, 0, 0, [a, b])
    session.answered(first, 0, 77)
    quiet = session.plan([(a, (0, 0, -1)), (b, (0, 0, -1))], 17)
    assert (quiet.full, quiet.session_id, quiet.epoch, quiet.named) == (False, 77, 1, [])
    session.answered(quiet, 0, 77)
    moved = session.plan([(a, (5, 0, 3)), (b, (0, 0, -1))], 17)
    assert (moved.epoch, moved.named) == (2, [a])
    session.answered(moved, 0, 77)
    replaced = Followed(("t", 1))  # the same partition at a new leader epoch: a new FetchState
    renewed = session.plan([(a, (5, 0, 3)), (replaced, (0, 0, -1))], 17)
    assert (renewed.full, renewed.session_id, renewed.epoch) == (True, 77, 0)
    session.answered(renewed, 0, 78)
    by_name = session.plan([(a, (5, 0, 3)), (replaced, (0, 0, -1))], 12)
    assert (by_name.full, by_name.session_id) == (True, 78)
    session.answered(by_name, 0, 0)  # the leader keeps no session for us: ask again next time
    again = session.plan([(a, (5, 0, 3)), (replaced, (0, 0, -1))], 12)
    assert (again.full, again.session_id, again.epoch) == (True, 0, 0)


async def test_a_partition_refused_before_its_leader_knew_it_is_fetched_once_it_does(
    replicated_member: HandlerBroker, follower_logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower often gets its LeaderAndIsr before the leader has the topic: its first fetch is
    refused (UNKNOWN_TOPIC_ID) and backed off. The next must not be an incremental fetch of the
    session that remembered the refusal: the follower would be refused forever, and leave the ISR."""
    leader = replicated_member
    connection = InProcessLeader(leader)
    async with _following(connection, follower_logs, monkeypatch) as fetcher:
        fetcher.add(host(fetcher, _follow(follower_logs, 0)))
        await _until(lambda: len(connection.sent) >= 1, "a first fetch, refused")
        await _lead(leader)
        await _produce(leader, 0, 3)
        await _until(lambda: _caught_up(leader, follower_logs, (0,)), "partition 0 replicated")
