"""The replica manager's one entry for appends as leader (ReplicaManager.append_records and
complete_appends), which Produce, the coordinators' writes and transaction markers all go through:
Kafka's ReplicaManager.appendRecords, Partition.appendRecordsToLeader and DelayedProduce."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import RecordBatchBuilder, RecordBatchHeader
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID

LED = TopicPartition(TOPIC, 0)
FOLLOWED = TopicPartition(TOPIC, 1)


def _batch(producer_id: int = -1, sequence: int = -1) -> bytearray:
    builder = RecordBatchBuilder(0, producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1)
    if sequence >= 0:
        builder.base_sequence = sequence
    builder.append(1_700_000_000_000, None, b"v")
    return bytearray(builder.build())


def _epochs_stamped(log: Log) -> list[int]:
    data = bytes(log.read(0, 1 << 20, isolation=FetchIsolation.LOG_END, min_one_message=True).read_bytes())
    epochs, position = [], 0
    while position < len(data):
        header = RecordBatchHeader.read(data, position)
        epochs.append(header.partition_leader_epoch)
        position += 12 + header.batch_length
    return epochs


async def _member(tmp_path: Path, isr: list[int], min_isr: int = 1) -> tuple[HandlerBroker, ReplicaManager]:
    """Broker 2 leading orders-0 at epoch 3 with `isr`, following orders-1; the cache already names it
    leader of orders-0 at epoch 4 (UpdateMetadata comes before the LeaderAndIsr it announces)."""
    broker = HandlerBroker(
        tmp_path / "member",
        node_id=2,
        zookeeper_mode=True,
        replicated=True,
        **{"min.insync.replicas": str(min_isr)},
    )
    led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=isr)
    followed = Partition(TOPIC, 1, leader=1, leader_epoch=7, replicas=[1, 2, 3])
    ids = {TOPIC: TOPIC_ID}
    await broker.call(update_metadata(BROKERS, [led, followed], ids), 8)
    await broker.call(leader_and_isr([led, followed], ids), 7)
    ahead = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=isr)
    await broker.call(update_metadata(BROKERS, [ahead, followed], ids), 8)
    replicas = broker.replicas
    assert replicas is not None
    return broker, replicas


async def test_an_append_is_stamped_with_the_epoch_the_partition_is_led_at_not_the_metadata_caches(
    tmp_path: Path,
) -> None:
    broker, replicas = await _member(tmp_path, isr=[2])
    try:
        made = replicas.append_records(LED, _batch(), AppendOrigin.CLIENT, required_acks=1)
        assert (made.base_offset, made.last_offset, made.leader_epoch) == (0, 0, 3)
        assert _epochs_stamped(broker.log(TOPIC, 0)) == [3]
    finally:
        broker.close()


async def test_an_append_to_a_partition_only_followed_here_or_unknown_appends_nothing(tmp_path: Path) -> None:
    broker, replicas = await _member(tmp_path, isr=[2])
    try:
        with pytest.raises(KafkaError) as followed:
            replicas.append_records(FOLLOWED, _batch(), AppendOrigin.COORDINATOR, required_acks=-1)
        assert followed.value.error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert broker.log(TOPIC, 1).log_end_offset == 0
        with pytest.raises(KafkaError) as unknown:
            replicas.append_records(TopicPartition("gone", 0), _batch(), AppendOrigin.CLIENT, 1)
        assert unknown.value.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    finally:
        broker.close()


async def test_an_acks_all_append_under_min_insync_replicas_appends_nothing_but_acks_1_does(
    tmp_path: Path,
) -> None:
    broker, replicas = await _member(tmp_path, isr=[2], min_isr=2)
    try:
        with pytest.raises(KafkaError) as refused:
            replicas.append_records(LED, _batch(), AppendOrigin.COORDINATOR, required_acks=-1)
        assert refused.value.error_code is ErrorCode.NOT_ENOUGH_REPLICAS
        assert broker.log(TOPIC, 0).log_end_offset == 0
        replicas.append_records(LED, _batch(), AppendOrigin.CLIENT, required_acks=1)
        assert broker.log(TOPIC, 0).log_end_offset == 1
    finally:
        broker.close()


async def test_an_acks_all_append_is_answered_once_the_isr_holds_it_and_times_out_otherwise(
    tmp_path: Path,
) -> None:
    broker, replicas = await _member(tmp_path, isr=[2, 3])
    try:
        made = replicas.append_records(LED, _batch(), AppendOrigin.CLIENT, required_acks=-1)
        assert made.waiting is not None  # follower 3 has not fetched it
        assert await replicas.complete_appends([made], timeout_ms=0) == [ErrorCode.REQUEST_TIMED_OUT]
        answer = asyncio.ensure_future(replicas.complete_appends([made], timeout_ms=30_000))
        await asyncio.sleep(0)
        assert not answer.done()
        broker.log(TOPIC, 0).update_high_watermark(1)  # follower 3 fetched past it
        replicas.appends.wake(LED)
        assert await asyncio.wait_for(answer, 10) == [ErrorCode.NONE]
    finally:
        broker.close()


async def test_an_idempotent_retry_is_answered_with_its_first_offsets_and_waits_for_the_isr_too(
    tmp_path: Path,
) -> None:
    broker, replicas = await _member(tmp_path, isr=[2, 3])
    try:
        first = replicas.append_records(LED, _batch(producer_id=5, sequence=0), AppendOrigin.CLIENT, -1)
        retry = replicas.append_records(LED, _batch(producer_id=5, sequence=0), AppendOrigin.CLIENT, -1)
        assert retry.duplicate and not first.duplicate
        assert (retry.base_offset, retry.last_offset, retry.records_count) == (0, 0, 0)
        assert broker.log(TOPIC, 0).log_end_offset == 1  # written once
        assert await replicas.complete_appends([retry], timeout_ms=0) == [ErrorCode.REQUEST_TIMED_OUT]
    finally:
        broker.close()
