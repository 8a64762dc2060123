"""The leader epoch a leader stamps on what it appends is the epoch of the last LeaderAndIsr it applied
(Kafka's Partition.appendRecordsToLeader), never the metadata cache's.

The controller sends UpdateMetadata before LeaderAndIsr (at failover, when a broker registers again):
for one round trip a broker that still leads at epoch e has a cache naming the next leader at e+1. A
batch it stamped e+1 would look, to that next leader, like one of its own: the follower it becomes
would find no divergence and keep records the partition's leader never had."""

from __future__ import annotations

from pathlib import Path

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchResponse, PartitionData
from odradek.protocol.messages.produce import ProduceResponse
from odradek.protocol.records import RecordBatchHeader
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)

#: Broker 2 leads orders-0 at epoch 3; the controller has moved it to broker 1 at epoch 4.
LED_HERE = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1])
MOVED = Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=[2, 3, 1], isr=[1, 3])


def _epochs_stamped(log: Log) -> list[int]:
    data = bytes(log.read(0, 1 << 20, isolation=FetchIsolation.LOG_END, min_one_message=True).read_bytes())
    epochs = []
    position = 0
    while position < len(data):
        header = RecordBatchHeader.read(data, position)
        epochs.append(header.partition_leader_epoch)
        position += 12 + header.batch_length
    return epochs


async def _produce(broker: HandlerBroker, value: bytes) -> int:
    response: ProduceResponse = await broker.call(produce_request(0, value), 9)
    return int(response.responses[0].partition_responses[0].error_code)


async def test_produce_stamps_the_epoch_the_broker_leads_at_not_the_metadata_cache_epoch(
    tmp_path: Path,
) -> None:
    old_leader = HandlerBroker(tmp_path / "b2", node_id=2, zookeeper_mode=True, replicated=True)
    new_leader = HandlerBroker(tmp_path / "b1", node_id=1, zookeeper_mode=True, replicated=True)
    try:
        await old_leader.call(update_metadata(BROKERS, [LED_HERE], {TOPIC: TOPIC_ID}), 8)
        await old_leader.call(leader_and_isr([LED_HERE], {TOPIC: TOPIC_ID}), 7)
        # the controller's failover: UpdateMetadata first, the LeaderAndIsr is still on its way
        await old_leader.call(update_metadata(BROKERS, [MOVED], {TOPIC: TOPIC_ID}), 8)
        assert await _produce(old_leader, b"never the leader's") == ErrorCode.NONE
        log = old_leader.log(TOPIC)
        assert _epochs_stamped(log) == [3]
        assert log.latest_epoch == 3

        # the new leader, at epoch 4, took a record of its own at offset 0
        await new_leader.call(update_metadata(BROKERS, [MOVED], {TOPIC: TOPIC_ID}), 8)
        await new_leader.call(leader_and_isr([MOVED], {TOPIC: TOPIC_ID}), 7)
        assert await _produce(new_leader, b"the leader's") == ErrorCode.NONE
        # broker 2, now its follower, fetches from its log end with its last epoch: the leader finds
        # where they diverge (epoch 3 ends at 0 in its log), and the follower truncates there
        await old_leader.call(leader_and_isr([MOVED], {TOPIC: TOPIC_ID}), 7)
        asked = FetchPartition(
            partition=0,
            current_leader_epoch=4,
            fetch_offset=log.log_end_offset,
            last_fetched_epoch=log.latest_epoch,
            partition_max_bytes=1 << 20,
        )
        response: FetchResponse = await new_leader.call(follower_fetch_request(2, [asked], 0, 0), 17)
        answer: PartitionData = response.responses[0].partitions[0]
        assert answer.error_code == ErrorCode.NONE
        assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (3, 0)
    finally:
        old_leader.close()
        new_leader.close()
