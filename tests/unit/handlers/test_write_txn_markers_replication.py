"""WriteTxnMarkers on a partition leader with followers: answered only once the in-sync replicas hold
the markers (Kafka appends them with acks=-1), or with the append's error (REQUEST_TIMED_OUT after
request.timeout.ms, NOT_LEADER_OR_FOLLOWER once the leadership moved), which the coordinator retries.
It was answered at the leader's append: the coordinator then wrote CompleteCommit, and a leader lost
before its followers fetched the marker left the partition's transaction open for good (the new
leader never had the marker, the coordinator never sends it again), holding read_committed readers
at its first offset and letting the producer's next transaction end it instead. As Kafka's acks=-1
append, a partition under min.insync.replicas refuses the marker with nothing appended
(NOT_ENOUGH_REPLICAS at once): it was appended, and each of the coordinator's retries appended another,
and the whole request waited request.timeout.ms for an ISR that could not take it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cluster.internal_topics import ZkInternalTopics
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, follower_fetch_request

pytestmark = pytest.mark.timeout(30)
E = ErrorCode


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[HandlerBroker]:
    """Broker 2 of the cluster, its high watermark moved by its followers' fetches, with a transaction
    coordinator (as Broker.start wires it) to write markers."""
    broker = HandlerBroker(
        tmp_path / "member",
        node_id=2,
        zookeeper_mode=True,
        replicated=True,
        **{"request.timeout.ms": "500", "min.insync.replicas": "2"},
    )
    services = broker.services
    assert services.replicas is not None
    services.transactions = TransactionCoordinator(
        services.config,
        services.cluster,
        ZkInternalTopics(services.topics, services.cluster),
        services.logs,
        2,
        services.producer_ids,
        None,
        leadership=services.leadership,
        marker_sender=InterBrokerTxnMarkerSender(services.config, services.cluster, services.node_id),
    )
    try:
        yield broker
    finally:
        broker.close()


async def _leading(broker: HandlerBroker) -> None:
    """Broker 2 leads orders-0 at epoch 3 with followers 3 and 1 in the ISR."""
    led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1])
    await broker.call(update_metadata(BROKERS, [led], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([led], {TOPIC: TOPIC_ID}), 7)


def _markers(partitions: tuple[int, ...] = (0,)) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(
        markers=[
            WritableTxnMarker(
                producer_id=1000,
                producer_epoch=0,
                transaction_result=True,
                topics=[WritableTxnMarkerTopic(name=TOPIC, partition_indexes=list(partitions))],
                coordinator_epoch=0,
            )
        ]
    )


def _error(response: WriteTxnMarkersResponse) -> int:
    return int(response.markers[0].topics[0].partitions[0].error_code)


def _errors(response: WriteTxnMarkersResponse) -> dict[int, ErrorCode]:
    return {p.partition_index: ErrorCode(p.error_code) for p in response.markers[0].topics[0].partitions}


async def _follower_fetch(broker: HandlerBroker, replica: int, offset: int) -> None:
    partition = FetchPartition(
        partition=0, current_leader_epoch=3, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    await broker.call(follower_fetch_request(replica, [partition], 0, min_bytes=0), 17)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_markers_are_answered_once_the_in_sync_replicas_hold_them(leader: HandlerBroker) -> None:
    await _leading(leader)
    answer = asyncio.ensure_future(leader.call(_markers(), 1))
    await _settle()
    assert leader.log(TOPIC).log_end_offset == 1  # appended on the leader
    assert not answer.done()  # but no follower has it
    await _follower_fetch(leader, 3, 1)
    await _settle()
    assert not answer.done()  # one of two
    await _follower_fetch(leader, 1, 1)
    assert _error(await asyncio.wait_for(answer, 5)) == E.NONE


async def test_markers_the_followers_never_fetch_are_answered_request_timed_out(
    leader: HandlerBroker,
) -> None:
    await _leading(leader)
    assert _error(await asyncio.wait_for(leader.call(_markers(), 1), 5)) == E.REQUEST_TIMED_OUT


async def test_a_marker_under_min_insync_replicas_is_refused_with_nothing_appended_and_holds_no_other(
    leader: HandlerBroker,
) -> None:
    # orders-0 has lost two of its three replicas; orders-1 has one replica, and it is in sync
    shrunk = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2])
    alone = Partition(TOPIC, 1, leader=2, leader_epoch=3, replicas=[2], isr=[2])
    await leader.call(update_metadata(BROKERS, [shrunk, alone], {TOPIC: TOPIC_ID}), 8)
    await leader.call(leader_and_isr([shrunk, alone], {TOPIC: TOPIC_ID}), 7)
    for attempt in range(1, 4):  # the coordinator sends again after each refusal
        answer = asyncio.ensure_future(leader.call(_markers((0, 1)), 1))
        await _settle()
        assert answer.done()  # at once: not after request.timeout.ms
        assert _errors(answer.result()) == {0: E.NOT_ENOUGH_REPLICAS, 1: E.NONE}
        assert leader.log(TOPIC, 0).log_end_offset == 0  # nothing appended, however often it is sent
        assert leader.log(TOPIC, 1).log_end_offset == attempt
