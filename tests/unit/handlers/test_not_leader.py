"""The data path on a ZooKeeper cluster member: a partition this broker does not lead is refused with
NOT_LEADER_OR_FOLLOWER (and, KIP-951, the current leader in tagged fields from Produce v10 / Fetch v12,
its endpoint from Produce v10 / Fetch v16), a stale or future client epoch with FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH (KIP-320), a partition nobody knows with UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

import time

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from odradek.protocol.records import RecordBatchBuilder
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, led_by_1, led_here, produce_request

LED_BY_3 = Partition(TOPIC, 2, leader=3, leader_epoch=4, replicas=[3, 1])


async def _member(cluster_member: HandlerBroker) -> HandlerBroker:
    """Broker 2 leading orders-0 (epoch 3), following orders-1 (leader 1, epoch 7); orders-2 led by
    broker 3 (no PLAINTEXT listener), with no replica here."""
    picture = [led_here(0, epoch=3), led_by_1(1, epoch=7), LED_BY_3]
    await cluster_member.call(update_metadata(BROKERS, picture, {TOPIC: TOPIC_ID}), 8)
    await cluster_member.call(
        leader_and_isr([led_here(0, epoch=3), led_by_1(1, epoch=7)], {TOPIC: TOPIC_ID}), 7
    )
    return cluster_member


def _fetch(
    version: int,
    partition: int,
    current_leader_epoch: int = -1,
    fetch_offset: int = 0,
    replica_id: int = -1,
) -> FetchRequest:
    return FetchRequest(
        replica_id=replica_id,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic=TOPIC,
                topic_id=TOPIC_ID,
                partitions=[
                    FetchPartition(
                        partition=partition,
                        fetch_offset=fetch_offset,
                        partition_max_bytes=1 << 20,
                        current_leader_epoch=current_leader_epoch,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
    )


async def test_produce_v9_refuses_without_naming_the_leader(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)
    response = await member.call_over_wire(produce_request(1), 9)
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (-1, -1)
    assert member.log(TOPIC, 1).log_end_offset == 0


async def test_produce_v10_names_the_leader_and_its_endpoint(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)
    response = await member.call_over_wire(produce_request(1), 10)
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (1, 7)
    assert [(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints] == [
        (1, "b1.example", 9092, "r1")
    ]
    led = await member.call_over_wire(produce_request(0), 10)
    assert led.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert led.node_endpoints == []


async def test_produce_to_a_partition_without_a_replica_here(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)
    response = await member.call_over_wire(produce_request(2), 11)
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (3, 4)
    assert response.node_endpoints == []  # broker 3 cannot be reached on PLAINTEXT
    internal = await member.call_over_wire(produce_request(2), 11, "INTERNAL")
    assert [n.host for n in internal.node_endpoints] == ["b3.internal"]


async def test_fetch_versions_name_the_leader_from_v12_and_its_endpoint_from_v16(
    cluster_member: HandlerBroker,
) -> None:
    """orders-2 has no replica here (from v11 a consumer may read any replica, KIP-392)."""
    member = await _member(cluster_member)
    for version, leader, endpoints in ((11, (-1, -1), False), (12, (3, 4), False), (16, (3, 4), True)):
        response = await member.call_over_wire(_fetch(version, 2), version, "INTERNAL")
        data = response.responses[0].partitions[0]
        assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER, version
        assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == leader, version
        expected = [(3, "b3.internal")] if endpoints else []
        assert [(n.node_id, n.host) for n in response.node_endpoints] == expected, version


async def test_a_follower_serves_consumer_fetches_from_v11_only_and_up_to_its_log_end(
    cluster_member: HandlerBroker,
) -> None:
    member = await _member(cluster_member)
    older = (await member.call_over_wire(_fetch(10, 1), 10)).responses[0].partitions[0]
    assert older.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    served = (
        (await member.call_over_wire(_fetch(11, 1, current_leader_epoch=7), 11)).responses[0].partitions[0]
    )
    assert served.error_code == ErrorCode.NONE and served.preferred_read_replica == -1
    assert served.high_watermark == member.log(TOPIC, 1).high_watermark
    fenced = (
        (await member.call_over_wire(_fetch(12, 1, current_leader_epoch=6), 12)).responses[0].partitions[0]
    )
    assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH
    past_end = (await member.call_over_wire(_fetch(12, 1, fetch_offset=5), 12)).responses[0].partitions[0]
    assert past_end.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


async def test_a_follower_shows_consumers_only_what_is_below_its_high_watermark(
    cluster_member: HandlerBroker,
) -> None:
    member = await _member(cluster_member)
    follower_log = member.log(TOPIC, 1)
    follower_log.auto_high_watermark = False  # as on a real cluster member: the leader's fetches move it
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, b"replicated")
    follower_log.append_as_follower(builder.build())
    assert (follower_log.log_end_offset, follower_log.high_watermark) == (1, 0)
    hidden = (await member.call_over_wire(_fetch(11, 1), 11)).responses[0].partitions[0]
    assert (hidden.error_code, bytes(hidden.records or b""), hidden.high_watermark) == (
        ErrorCode.NONE,
        b"",
        0,
    )
    follower_log.update_high_watermark(1)
    shown = (await member.call_over_wire(_fetch(11, 1), 11)).responses[0].partitions[0]
    assert b"replicated" in bytes(shown.records) and shown.high_watermark == 1


async def test_fetch_from_the_leader_checks_the_clients_leader_epoch(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)
    await member.call(produce_request(0), 9)
    # the followers in orders-0's ISR (3 and 1) fetch what was appended: the high watermark moves
    for follower in (3, 1):
        await member.call(_fetch(12, 0, fetch_offset=1, replica_id=follower), 12)
    served = (
        (await member.call_over_wire(_fetch(12, 0, current_leader_epoch=3), 12)).responses[0].partitions[0]
    )
    assert served.error_code == ErrorCode.NONE and served.high_watermark == 1
    fenced = (
        (await member.call_over_wire(_fetch(12, 0, current_leader_epoch=2), 12)).responses[0].partitions[0]
    )
    assert fenced.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert (fenced.current_leader.leader_id, fenced.current_leader.leader_epoch) == (2, 3)
    future = (
        (await member.call_over_wire(_fetch(12, 0, current_leader_epoch=4), 12)).responses[0].partitions[0]
    )
    assert future.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH


async def test_fetch_of_an_unknown_topic(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)
    request = _fetch(12, 0)
    request.topics[0].topic = "nowhere"
    data = (await member.call(request, 12)).responses[0].partitions[0]
    assert data.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_list_offsets_is_the_leaders(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)

    def request(partition: int, epoch: int = -1) -> ListOffsetsRequest:
        wanted = ListOffsetsPartition(partition_index=partition, timestamp=-1, current_leader_epoch=epoch)
        return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=TOPIC, partitions=[wanted])])

    def code(response: object) -> int:
        return int(response.topics[0].partitions[0].error_code)  # type: ignore[attr-defined]

    assert code(await member.call(request(0, 3), 7)) == ErrorCode.NONE
    assert code(await member.call(request(0, 2), 7)) == ErrorCode.FENCED_LEADER_EPOCH
    assert code(await member.call(request(1), 7)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert code(await member.call(request(2), 7)) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert code(await member.call(request(9), 7)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_offset_for_leader_epoch_is_the_leaders(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)

    def request(partition: int, current: int = -1) -> OffsetForLeaderEpochRequest:
        wanted = OffsetForLeaderPartition(partition=partition, current_leader_epoch=current, leader_epoch=3)
        return OffsetForLeaderEpochRequest(
            replica_id=-1, topics=[OffsetForLeaderTopic(topic=TOPIC, partitions=[wanted])]
        )

    led = (await member.call(request(0, 3), 4)).topics[0].partitions[0]
    assert (led.error_code, led.leader_epoch, led.end_offset) == (0, 3, 0)  # epoch 3 began at offset 0
    assert (await member.call(request(0, 4), 4)).topics[0].partitions[
        0
    ].error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    following = (await member.call(request(1), 4)).topics[0].partitions[0]
    assert following.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_delete_records_is_the_leaders(cluster_member: HandlerBroker) -> None:
    member = await _member(cluster_member)

    def request(partition: int) -> DeleteRecordsRequest:
        wanted = DeleteRecordsPartition(partition_index=partition, offset=-1)
        return DeleteRecordsRequest(
            topics=[DeleteRecordsTopic(name=TOPIC, partitions=[wanted])], timeout_ms=1000
        )

    assert (await member.call(request(0), 2)).topics[0].partitions[0].error_code == ErrorCode.NONE
    assert (await member.call(request(1), 2)).topics[0].partitions[
        0
    ].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def _rack_fetch(version: int, rack: str, session_epoch: int = -1, session_id: int = 0) -> FetchRequest:
    request = _fetch(version, 0)
    request.rack_id = rack
    request.max_wait_ms, request.min_bytes = 5000, 1
    request.session_epoch, request.session_id = session_epoch, session_id
    return request


async def _rack_aware_leader(cluster_member: HandlerBroker) -> HandlerBroker:
    """Broker 2 leads orders-0 with the rack-aware selector; follower 1 (rack r1) has fetched to its end."""
    member = await _member(cluster_member)
    assert member.replicas is not None
    member.replicas.leaders.replica_selector_class = (
        "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    )
    member.replicas.leaders.record_follower_fetch(TOPIC, 0, 1, 0)
    return member


async def test_the_leader_sends_a_consumer_to_the_follower_in_its_rack_at_once_and_without_records(
    cluster_member: HandlerBroker,
) -> None:
    member = await _rack_aware_leader(cluster_member)
    started = time.monotonic()
    response = await member.call_over_wire(_rack_fetch(11, "r1"), 11)
    assert time.monotonic() - started < 4  # not the 5 s long poll
    data = response.responses[0].partitions[0]
    assert (data.error_code, data.preferred_read_replica, bytes(data.records or b"")) == (
        ErrorCode.NONE,
        1,
        b"",
    )
    # Follower 3 (rack r3) has no PLAINTEXT endpoint and has not fetched: the consumer stays here.
    request = _rack_fetch(11, "r3")
    request.max_wait_ms = 0
    stays = (await member.call_over_wire(request, 11)).responses[0].partitions[0]
    assert stays.preferred_read_replica == -1


async def test_an_incremental_fetch_session_repeats_the_preferred_read_replica(
    cluster_member: HandlerBroker,
) -> None:
    member = await _rack_aware_leader(cluster_member)
    first = await member.call_over_wire(_rack_fetch(12, "r1", session_epoch=0), 12)
    assert first.responses[0].partitions[0].preferred_read_replica == 1
    again = _rack_fetch(12, "r1", session_epoch=1, session_id=first.session_id)
    again.topics = []
    answer = await member.call_over_wire(again, 12)
    assert [p.preferred_read_replica for t in answer.responses for p in t.partitions] == [1]
