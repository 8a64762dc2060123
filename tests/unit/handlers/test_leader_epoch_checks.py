"""A client's (or follower's) leader epoch is checked against the epoch this broker leads at, the last
LeaderAndIsr it applied (Kafka's Partition.localLogWithEpochOrThrow), never against the metadata
cache's, which the controller's UpdateMetadata moves on first."""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchResponse
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from odradek.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)

LED_HERE = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1])
#: The controller's next decision, in the cache before its LeaderAndIsr arrives.
MOVED = Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=[2, 3, 1], isr=[1, 3])


async def _led_at_3_cached_at_4(broker: HandlerBroker) -> None:
    await broker.call(update_metadata(BROKERS, [LED_HERE], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([LED_HERE], {TOPIC: TOPIC_ID}), 7)
    await broker.call(produce_request(0), 9)
    await broker.call(update_metadata(BROKERS, [MOVED], {TOPIC: TOPIC_ID}), 8)


async def test_a_follower_fetch_at_the_epoch_the_broker_leads_at_is_served_while_the_cache_moved_on(
    replicated_member: HandlerBroker,
) -> None:
    await _led_at_3_cached_at_4(replicated_member)
    asked = FetchPartition(
        partition=0,
        current_leader_epoch=3,
        fetch_offset=0,
        last_fetched_epoch=-1,
        partition_max_bytes=1 << 20,
    )
    response: FetchResponse = await replicated_member.call(follower_fetch_request(3, [asked], 0, 0), 17)
    answer = response.responses[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    assert answer.records


async def test_list_offsets_at_the_epoch_the_broker_leads_at_is_served_while_the_cache_moved_on(
    replicated_member: HandlerBroker,
) -> None:
    await _led_at_3_cached_at_4(replicated_member)
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=TOPIC,
                partitions=[ListOffsetsPartition(partition_index=0, current_leader_epoch=3, timestamp=-2)],
            )
        ],
    )
    response: ListOffsetsResponse = await replicated_member.call(request, 7)
    answer = response.topics[0].partitions[0]
    assert (answer.error_code, answer.offset) == (ErrorCode.NONE, 0)


async def test_offset_for_leader_epoch_answers_from_the_epochs_the_leader_applied_not_the_cache(
    replicated_member: HandlerBroker,
) -> None:
    await _led_at_3_cached_at_4(replicated_member)

    async def end_of(epoch: int, current: int) -> tuple[int, int, int]:
        request = OffsetForLeaderEpochRequest(
            replica_id=3,
            topics=[
                OffsetForLeaderTopic(
                    topic=TOPIC,
                    partitions=[
                        OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=current, leader_epoch=epoch
                        )
                    ],
                )
            ],
        )
        response: OffsetForLeaderEpochResponse = await replicated_member.call(request, 4)
        answer = response.topics[0].partitions[0]
        return answer.error_code, answer.leader_epoch, answer.end_offset

    assert await end_of(3, current=3) == (ErrorCode.NONE, 3, 1)
    # epoch 4 is the next leader's: this broker never wrote in it, and must not say it ends here
    assert await end_of(4, current=-1) == (ErrorCode.NONE, -1, -1)
    assert (await end_of(4, current=4))[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
