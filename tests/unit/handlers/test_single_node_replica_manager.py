"""A single node is a cluster of one: its replica manager leads each of its partitions at leader epoch 0
with an ISR of itself, from start-up and as TopicAdmin makes or deletes them (what a controller's
LeaderAndIsr and StopReplica do in a cluster), and its high watermark follows the log end by a leader's
rule, not the log's own."""

from __future__ import annotations

from pathlib import Path

from odradek.partition.leadership import Refusal
from odradek.protocol.error_codes import ErrorCode
from tests.support.handler_services import NODE_ID, HandlerBroker
from tests.unit.handlers.cluster_member import produce_request
from tests.unit.handlers.fetching import produce

TOPIC = "orders"


def _led_alone(broker: HandlerBroker, partition: int) -> bool:
    hosted = broker.services.replicas.leading.get((TOPIC, partition))
    return (
        hosted is not None
        and hosted.leader == NODE_ID
        and hosted.leader_epoch == 0
        and hosted.replicas == [NODE_ID]
        and hosted.isr == [NODE_ID]
        and hosted.log is broker.log(TOPIC, partition)
    )


async def test_a_single_node_leads_each_partition_it_makes_at_epoch_0_with_an_isr_of_itself(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path)
    try:
        await broker.create_topic(TOPIC, 2)
        assert _led_alone(broker, 0) and _led_alone(broker, 1)
        await broker.services.topics.create_partitions(TOPIC, 3)  # CreatePartitions
        assert _led_alone(broker, 2)
        replicas = broker.services.replicas
        assert replicas.leader_refusal(TOPIC, 2, 0) is None
        assert replicas.leader_refusal(TOPIC, 2, 1) == Refusal(ErrorCode.UNKNOWN_LEADER_EPOCH, NODE_ID, 0)
        assert broker.services.leadership is replicas  # what the coordinators ask too
    finally:
        broker.close()


async def test_a_single_node_leads_the_partitions_it_loads_and_their_high_watermark_is_the_log_end(
    tmp_path: Path,
) -> None:
    first = HandlerBroker(tmp_path)
    try:
        await first.create_topic(TOPIC, 1)
        await produce(first, TOPIC, 0, b"a", b"b", b"c")
    finally:
        first.close()
    broker = HandlerBroker(tmp_path)
    try:
        assert _led_alone(broker, 0)
        log = broker.log(TOPIC, 0)
        assert log.high_watermark == log.log_end_offset == 3
        await produce(broker, TOPIC, 0, b"d")
        assert log.high_watermark == 4  # a leader alone in its ISR: at once
        assert log.leader_epoch_cache.end_offset_for(0, log.log_end_offset) == (0, 4)
    finally:
        broker.close()


async def test_a_topic_deleted_on_a_single_node_is_no_longer_led(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path)
    try:
        await broker.create_topic(TOPIC, 1)
        await broker.services.topics.delete_topic(TOPIC)
        assert (TOPIC, 0) not in broker.services.replicas.hosted
        response = await broker.call(produce_request(0), 9)
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        broker.close()


async def test_a_single_node_writes_no_leader_epoch_checkpoint_per_new_partition_on_the_event_loop(
    tmp_path: Path,
) -> None:
    """Leading a partition just made recorded its epoch's start in its leader-epoch checkpoint, a file
    write (and a directory sync) on the event loop per partition: seconds for a topic of thousands.
    Nothing follows a single node's empty log, so nothing is recorded until its first append, as before
    it had a replica manager (OffsetForLeaderEpoch of an empty partition answers as it did)."""
    broker = HandlerBroker(tmp_path)
    try:
        await broker.create_topic(TOPIC, 3)
        log = broker.log(TOPIC, 1)
        assert log.leader_epoch_cache.latest_epoch is None  # nothing assigned, nothing written
        await produce(broker, TOPIC, 1, b"a")
        assert log.leader_epoch_cache.latest_epoch == 0
    finally:
        broker.close()


async def test_acks_all_on_a_single_node_at_min_insync_replicas_2_is_acknowledged_kafkas_minimum_being_1(
    tmp_path: Path,
) -> None:
    """Kafka's effective minimum is min(min.insync.replicas, replication factor) (Partition.effectiveMinIsr):
    a single node's ISR of one satisfies it, so acks=all is answered NONE at once, as before it had a
    replica manager (its leader's rule, not a branch on the mode, says so now)."""
    broker = HandlerBroker(tmp_path, **{"min.insync.replicas": "2"})
    try:
        await broker.create_topic(TOPIC, 1)
        request = produce_request(0)
        request.acks = -1
        answer = (await broker.call(request, 9)).responses[0].partition_responses[0]
        assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 0)
        assert broker.log(TOPIC, 0).high_watermark == 1
    finally:
        broker.close()
