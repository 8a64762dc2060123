"""ListOffsets on a new leader whose high watermark is still behind the start of its epoch (Kafka's
Partition.fetchOffsetForTimestamp): LATEST, and a timestamp lookup that finds nothing below the high
watermark, are OFFSET_NOT_AVAILABLE until the high watermark catches up. The previous leader may have
told consumers of a higher one; answering the lagging high watermark would take LATEST backwards."""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from odradek.protocol.records import RecordBatchBuilder
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, follower_fetch_request

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
FIRST_TIMESTAMP = 1_700_000_000_000


async def _new_leader_behind(broker: HandlerBroker) -> None:
    """Broker 2 followed orders-0 (leader 1, epoch 3), holds offsets 0-2, and heard of a high watermark
    of 1 only; then it is elected leader at epoch 4."""
    followed = Partition(TOPIC, 0, leader=1, leader_epoch=3, replicas=[2, 3, 1])
    await broker.call(update_metadata(BROKERS, [followed], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([followed], {TOPIC: TOPIC_ID}), 7)
    log = broker.log(TOPIC)
    fetched = bytearray()
    for offset in range(3):
        builder = RecordBatchBuilder(offset, partition_leader_epoch=3)
        builder.append(FIRST_TIMESTAMP + offset, None, b"v%d" % offset)
        fetched += builder.build()
    log.append_as_follower(fetched)
    log.update_high_watermark(1)
    elected = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=[2, 3])
    await broker.call(update_metadata(BROKERS, [elected], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([elected], {TOPIC: TOPIC_ID}), 7)


async def _list_offsets(
    broker: HandlerBroker, timestamp: int, replica_id: int = -1, version: int = 7
) -> tuple[int, int]:
    asked = ListOffsetsPartition(partition_index=0, current_leader_epoch=4, timestamp=timestamp)
    request = ListOffsetsRequest(
        replica_id=replica_id, topics=[ListOffsetsTopic(name=TOPIC, partitions=[asked])]
    )
    response: ListOffsetsResponse = await broker.call(request, version)
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.offset


async def test_list_offsets_latest_on_a_new_leader_whose_high_watermark_lags_is_offset_not_available(
    replicated_member: HandlerBroker,
) -> None:
    broker = replicated_member
    await _new_leader_behind(broker)
    assert await _list_offsets(broker, LATEST) == (ErrorCode.OFFSET_NOT_AVAILABLE, -1)
    # found below the high watermark: answered; at or past it: not available yet
    assert await _list_offsets(broker, FIRST_TIMESTAMP) == (ErrorCode.NONE, 0)
    assert (await _list_offsets(broker, FIRST_TIMESTAMP + 2))[0] == ErrorCode.OFFSET_NOT_AVAILABLE
    assert (await _list_offsets(broker, MAX_TIMESTAMP))[0] == ErrorCode.OFFSET_NOT_AVAILABLE
    assert await _list_offsets(broker, EARLIEST) == (ErrorCode.NONE, 0)
    # a follower asking where the log ends (replica_id set, no isolation) is told
    assert await _list_offsets(broker, LATEST, replica_id=3) == (ErrorCode.NONE, 3)

    # the in-sync follower catches up: the high watermark reaches the epoch's start
    caught_up = FetchPartition(
        partition=0, current_leader_epoch=4, fetch_offset=3, last_fetched_epoch=3, partition_max_bytes=1 << 20
    )
    await broker.call(follower_fetch_request(3, [caught_up], 0, 0), 17)
    assert broker.log(TOPIC).high_watermark == 3
    assert await _list_offsets(broker, LATEST) == (ErrorCode.NONE, 3)
    assert await _list_offsets(broker, FIRST_TIMESTAMP + 2) == (ErrorCode.NONE, 2)


async def test_list_offsets_latest_answers_the_epoch_the_partition_is_led_at_not_its_last_records(
    replicated_member: HandlerBroker,
) -> None:
    """Kafka's fetchOffsetForTimestamp answers LATEST with the partition's leader epoch: the records
    below the end were written at epoch 3, the broker leads at 4 (a consumer validates its position
    against the epoch it is told)."""
    broker = replicated_member
    await _new_leader_behind(broker)
    caught_up = FetchPartition(
        partition=0, current_leader_epoch=4, fetch_offset=3, last_fetched_epoch=3, partition_max_bytes=1 << 20
    )
    await broker.call(follower_fetch_request(3, [caught_up], 0, 0), 17)
    asked = ListOffsetsPartition(partition_index=0, current_leader_epoch=4, timestamp=LATEST)
    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=TOPIC, partitions=[asked])])
    response: ListOffsetsResponse = await broker.call(request, 7)
    answer = response.topics[0].partitions[0]
    assert (answer.error_code, answer.offset, answer.leader_epoch) == (ErrorCode.NONE, 3, 4)
