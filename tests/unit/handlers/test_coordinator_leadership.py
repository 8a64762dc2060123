"""The coordinators append as leaders too (their records, transaction markers): like Produce they lead
what the replica manager says they lead, at its epoch, never what the metadata cache says
(cluster/leadership.py). UpdateMetadata reaches a broker before the LeaderAndIsr it announces."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.records import offset_commit_record
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from odradek.protocol.records import RecordBatchHeader
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID

OFFSETS_ID = uuid.UUID(int=99)
IDS = {TOPIC: TOPIC_ID, OFFSETS_TOPIC: OFFSETS_ID}


def _epochs_stamped(log: Log) -> list[int]:
    data = bytes(log.read(0, 1 << 20, isolation=FetchIsolation.LOG_END, min_one_message=True).read_bytes())
    epochs = []
    position = 0
    while position < len(data):
        header = RecordBatchHeader.read(data, position)
        epochs.append(header.partition_leader_epoch)
        position += 12 + header.batch_length
    return epochs


def _member(tmp_path: Path) -> HandlerBroker:
    return HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True, replicated=True)


def _transactions(broker: HandlerBroker) -> TransactionCoordinator:
    services = broker.services
    assert services.replicas is not None
    return TransactionCoordinator(
        services.config,
        services.cluster,
        services.topics,
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
        leadership=services.replicas,  # as the broker wires it in a cluster
    )


async def test_a_transaction_marker_is_stamped_with_the_epoch_the_broker_leads_at(tmp_path: Path) -> None:
    broker = _member(tmp_path)
    try:
        led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1])
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
            services.topics,
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
