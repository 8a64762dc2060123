"""The coordinators append as leaders too (their records, transaction markers): like Produce they lead
what the replica manager says they lead, at its epoch, never what the metadata cache says
(partition/leadership.py). UpdateMetadata reaches a broker before the LeaderAndIsr it announces."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from odradek.cluster.internal_topics import ZkInternalTopics
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.records import offset_commit_record
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_metadata import TxnState
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.partition.leader_append import LeaderAppend
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from odradek.protocol.records import RecordBatchHeader
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition
from odradek.storage.prepared_appends import PreparedAppend
from odradek.storage.producer_state import AppendOrigin
from tests.support.async_waits import until
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID

OFFSETS_ID = uuid.UUID(int=99)
TXN_STATE_ID = uuid.UUID(int=98)
IDS = {TOPIC: TOPIC_ID, OFFSETS_TOPIC: OFFSETS_ID, TRANSACTION_STATE_TOPIC: TXN_STATE_ID}


def _epochs_stamped(log: Log) -> list[int]:
    data = bytes(log.read(0, 1 << 20, isolation=FetchIsolation.LOG_END, min_one_message=True).read_bytes())
    epochs = []
    position = 0
    while position < len(data):
        header = RecordBatchHeader.read(data, position)
        epochs.append(header.partition_leader_epoch)
        position += 12 + header.batch_length
    return epochs


class AskedLeadership:
    """The replica manager's word, with the partitions it was asked about (in order)."""

    def __init__(self, leadership: Leadership) -> None:
        self.leadership = leadership
        self.asked: list[tuple[str, int]] = []

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        self.asked.append((topic, partition))
        return self.leadership.leader_epoch(topic, partition)

    def under_min_isr(self, topic: str, partition: int) -> bool:
        return self.leadership.under_min_isr(topic, partition)

    def append_records(
        self,
        partition: TopicPartition,
        records: bytearray | memoryview,
        origin: AppendOrigin,
        required_acks: int,
        prepared: PreparedAppend | None = None,
    ) -> LeaderAppend:
        self.asked.append((partition.topic, partition.partition))
        return self.leadership.append_records(partition, records, origin, required_acks, prepared)

    async def complete_appends(self, appends: Sequence[LeaderAppend], timeout_ms: int) -> list[ErrorCode]:
        return await self.leadership.complete_appends(appends, timeout_ms)


def _member(tmp_path: Path, replicated: bool = True) -> HandlerBroker:
    return HandlerBroker(
        tmp_path / "member",
        node_id=2,
        zookeeper_mode=True,
        replicated=replicated,
        **{"transaction.state.log.num.partitions": "1"},
    )


def _transactions(broker: HandlerBroker) -> TransactionCoordinator:
    services = broker.services
    assert services.replicas is not None
    return TransactionCoordinator(
        services.config,
        services.cluster,
        ZkInternalTopics(services.topics, services.cluster),
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
        leadership=services.replicas,  # as the broker wires it in a cluster
        marker_sender=InterBrokerTxnMarkerSender(services.config, services.cluster, services.node_id),
    )


async def test_a_transaction_marker_is_stamped_with_the_epoch_the_broker_leads_at(tmp_path: Path) -> None:
    broker = _member(tmp_path)
    try:
        # alone in its ISR: the marker's acks=all wait ends at its append
        led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2])
        await broker.call(update_metadata(BROKERS, [led], IDS), 8)
        await broker.call(leader_and_isr([led], IDS), 7)
        # the controller's next decision (this broker leads again, at 4) is in the cache only
        again = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=[2, 3])
        await broker.call(update_metadata(BROKERS, [again], IDS), 8)
        broker.services.transactions = _transactions(broker)
        markers = WriteTxnMarkersRequest(
            markers=[
                WritableTxnMarker(
                    producer_id=7,
                    producer_epoch=0,
                    transaction_result=True,
                    topics=[WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])],
                    coordinator_epoch=0,
                )
            ]
        )
        response: WriteTxnMarkersResponse = await broker.call(markers, 1)
        assert response.markers[0].topics[0].partitions[0].error_code == ErrorCode.NONE
        assert _epochs_stamped(broker.log(TOPIC)) == [3]
    finally:
        broker.close()


async def test_a_group_coordinator_writes_nothing_to_a_partition_its_broker_only_follows(
    tmp_path: Path,
) -> None:
    broker = _member(tmp_path)
    try:
        followed = Partition(OFFSETS_TOPIC, 0, leader=1, leader_epoch=3, replicas=[1, 2, 3])
        await broker.call(update_metadata(BROKERS, [followed], IDS), 8)
        await broker.call(leader_and_isr([followed], IDS), 7)
        services = broker.services
        replicas = services.replicas
        assert replicas is not None
        groups = GroupCoordinator(
            services.config,
            services.cluster,
            ZkInternalTopics(services.topics, services.cluster),
            services.logs,
            services.node_id,
            leadership=replicas,  # as the broker wires it in a cluster
        )
        groups.started = True
        # UpdateMetadata names this broker leader at 4; its LeaderAndIsr is still on the way when a
        # LeaderAndIsr for another partition runs the coordinators' leadership hook
        elected = Partition(OFFSETS_TOPIC, 0, leader=2, leader_epoch=4, replicas=[1, 2, 3], isr=[2, 3])
        await broker.call(update_metadata(BROKERS, [elected], IDS), 8)
        groups.refresh_leadership()
        await groups.runtime.wait_loaded()
        assert 0 not in groups.runtime.shards
        record = offset_commit_record("g", TOPIC, 0, 5, -1, "", int(time.time() * 1000), None)
        try:
            groups.runtime.append_records(0, [record])
        except KafkaError as refused:
            assert refused.error_code == ErrorCode.NOT_COORDINATOR
        assert broker.log(OFFSETS_TOPIC).log_end_offset == 0  # the follower's log is its leader's copy
    finally:
        broker.close()


async def test_a_coordinators_own_markers_are_written_where_and_at_the_epoch_the_replica_manager_says(
    tmp_path: Path,
) -> None:
    """The coordinator's marker channel routes by the cache (the controller's newest word, as Kafka's),
    but writes a marker here only where the replica manager leads, at its epoch: orders-0 is stamped
    with the epoch of its last LeaderAndIsr, not the cache's newer one, and orders-1, which the cache
    already names this broker leader of while it still follows, gets its marker once its LeaderAndIsr
    arrives, never in the follower's log."""
    broker = _member(tmp_path, replicated=False)
    try:
        state_log = Partition(TRANSACTION_STATE_TOPIC, 0, leader=2, leader_epoch=1, replicas=[2])
        # alone in their ISR as leaders here, so the coordinator's acks=all waits end at its appends
        led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2])
        followed = Partition(TOPIC, 1, leader=1, leader_epoch=7, replicas=[1, 2, 3])
        await broker.call(update_metadata(BROKERS, [state_log, led, followed], IDS), 8)
        await broker.call(leader_and_isr([state_log, led, followed], IDS), 7)
        coordinator = _transactions(broker)
        leadership = AskedLeadership(coordinator.markers.leadership)
        coordinator.markers.leadership = leadership
        await coordinator.start()
        pid, epoch = await coordinator.init_producer_id("t", 60000, -1, -1)
        added = await coordinator.add_partitions("t", pid, epoch, [(TOPIC, 0), (TOPIC, 1)])
        assert set(added.values()) == {ErrorCode.NONE}
        # the controller's next decisions, in the cache only: this broker leads both, at 4 and 8
        ahead = [
            Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=[2]),
            Partition(TOPIC, 1, leader=2, leader_epoch=8, replicas=[1, 2, 3], isr=[2]),
        ]
        await broker.call(update_metadata(BROKERS, ahead, IDS), 8)
        await coordinator.end_txn("t", pid, epoch, committed=True)
        await until(lambda: broker.log(TOPIC, 0).log_end_offset == 1)
        assert _epochs_stamped(broker.log(TOPIC, 0)) == [3]
        await until(lambda: leadership.asked.count((TOPIC, 1)) >= 3)  # tried again every 100 ms
        assert broker.log(TOPIC, 1).log_end_offset == 0
        assert coordinator.state_log.txns["t"].state is TxnState.PREPARE_COMMIT
        await broker.call(leader_and_isr([ahead[1]], IDS), 7)
        await until(lambda: coordinator.state_log.txns["t"].state is TxnState.COMPLETE_COMMIT)
        assert _epochs_stamped(broker.log(TOPIC, 1)) == [8]
        coordinator.stop()
    finally:
        broker.close()
