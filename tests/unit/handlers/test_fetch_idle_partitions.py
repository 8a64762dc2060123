"""At 10,000 partitions a leader answers each follower's fetch session of 3,333 partitions several times a
second, nearly all of them idle. Two costs grew with the partitions, not with the data, and starved the
leaders: every incremental replica fetch read the log of every partition of its session, and a parked
fetch re-read all of its partitions each time any one of them was woken (an append, a high watermark's
move). These tests count the log reads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)

from .fetching import FETCH_VERSION as CONSUMER_FETCH_VERSION
from .fetching import fetch_request, produce
from .test_fetch_long_poll import still_waiting

pytestmark = pytest.mark.timeout(30)

PARTITIONS = 20
REPLICA_FETCH_VERSION = 15
LEADER_EPOCH = 3
LONG_WAIT_MS = 20_000


@pytest.fixture
def log_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The log reads Fetch makes (records, and the epoch lookups of a follower's divergence check)."""
    reads: list[str] = []
    read, end_offset_for_epoch = Log.read, Log.end_offset_for_epoch

    def counted_read(self: Log, *args: object, **kwargs: object) -> object:
        reads.append(f"read {self.dir.name}")
        return read(self, *args, **kwargs)  # type: ignore[arg-type]

    def counted_epoch_lookup(self: Log, epoch: int) -> tuple[int, int]:
        reads.append(f"epoch {self.dir.name}")
        return end_offset_for_epoch(self, epoch)

    monkeypatch.setattr(Log, "read", counted_read)
    monkeypatch.setattr(Log, "end_offset_for_epoch", counted_epoch_lookup)
    yield reads


async def _lead(leader: HandlerBroker) -> None:
    """Broker 2 leads orders 0-19 at epoch 3, broker 3 in the ISR with it, one record in each."""
    led = [
        Partition(TOPIC, i, leader=2, leader_epoch=LEADER_EPOCH, replicas=[2, 3], isr=[2, 3])
        for i in range(PARTITIONS)
    ]
    await leader.call(update_metadata(BROKERS, led, {TOPIC: TOPIC_ID}), 8)
    await leader.call(leader_and_isr(led, {TOPIC: TOPIC_ID}), 7)
    for index in range(PARTITIONS):
        response = await leader.call(produce_request(index), 9)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def _at(index: int, offset: int) -> FetchPartition:
    return FetchPartition(
        partition=index,
        current_leader_epoch=LEADER_EPOCH,
        fetch_offset=offset,
        last_fetched_epoch=LEADER_EPOCH,
        log_start_offset=0,
        partition_max_bytes=1 << 20,
    )


async def _replica_fetch(
    leader: HandlerBroker, session: tuple[int, int], named: list[FetchPartition]
) -> FetchResponse:
    request: FetchRequest = follower_fetch_request(3, named, max_wait_ms=0)
    request.session_id, request.session_epoch = session
    response: FetchResponse = await leader.call(request, REPLICA_FETCH_VERSION)
    assert response.error_code == ErrorCode.NONE
    return response


def _answered(response: FetchResponse) -> dict[int, int]:
    """Partition -> high watermark, of the partitions the answer names."""
    return {p.partition_index: p.high_watermark for t in response.responses for p in t.partitions}


async def test_an_incremental_replica_fetch_of_idle_partitions_reads_no_log(
    replicated_member: HandlerBroker, log_reads: list[str]
) -> None:
    leader = replicated_member
    await _lead(leader)
    # The follower has every record: its session's full fetch moves the high watermarks to 1 and is
    # answered with them; from then on nothing changes.
    full = await _replica_fetch(leader, (0, 0), [_at(i, 1) for i in range(PARTITIONS)])
    session = full.session_id
    assert session
    assert _answered(full) == dict.fromkeys(range(PARTITIONS), 1)
    assert _answered(await _replica_fetch(leader, (session, 1), [])) == {}
    log_reads.clear()
    for epoch in (2, 3, 4):
        assert _answered(await _replica_fetch(leader, (session, epoch), [])) == {}
    assert log_reads == []
    # What changes is still answered: a record appended to partition 7, then its high watermark.
    await leader.call(produce_request(7), 9)
    answer = await _replica_fetch(leader, (session, 5), [])
    assert [(p.partition_index, bool(p.records)) for t in answer.responses for p in t.partitions] == [
        (7, True)
    ]
    assert _answered(await _replica_fetch(leader, (session, 6), [_at(7, 2)])) == {7: 2}
    leader.logs.get_or_create_log(TOPIC, 3).delete_records(1)  # a log start moved by DeleteRecords
    answer = await _replica_fetch(leader, (session, 7), [])
    assert [(p.partition_index, p.log_start_offset) for t in answer.responses for p in t.partitions] == [
        (3, 1)
    ]


async def test_a_parked_fetch_woken_by_one_partition_rereads_only_that_partition(
    handler_broker: HandlerBroker, log_reads: list[str]
) -> None:
    topic = "parked"
    await handler_broker.create_topic(topic, PARTITIONS)
    offsets = {(topic, i): 0 for i in range(PARTITIONS)}
    request = fetch_request(offsets, min_bytes=10_000, max_wait_ms=LONG_WAIT_MS)
    fetch = asyncio.ensure_future(handler_broker.call(request, CONSUMER_FETCH_VERSION))
    assert await still_waiting(fetch)
    assert len(log_reads) == PARTITIONS  # the first read, of every partition
    log_reads.clear()
    await produce(handler_broker, topic, 7, b"v")  # far from min_bytes: the fetch goes on waiting
    handler_broker.services.appends.wake(TopicPartition(topic, 11))  # as a high watermark's move
    assert await still_waiting(fetch)
    assert sorted(log_reads) == [f"read {topic}-11", f"read {topic}-7"]
    await produce(handler_broker, topic, 3, b"v" * 12_000)  # enough: answered with both records
    response = await fetch
    with_records = sorted(p.partition_index for t in response.responses for p in t.partitions if p.records)
    assert with_records == [3, 7]
