"""A transaction coordinator that loads a `__transaction_state` partition and finds a transaction
prepared (PrepareCommit / PrepareAbort written, the broker gone before its markers were) writes the
markers and completes it, as Kafka's coordinator does when it takes over a partition."""

from __future__ import annotations

import asyncio

import pytest

from odradek.cluster.internal_topics import SingleNodeInternalTopics, ZkInternalTopics
from odradek.cluster.metadata import BrokerEndpoint, LiveBroker
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_metadata import MAX_EPOCH, TxnState
from odradek.coordinator.txn_records import TxnLogRecord
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from odradek.protocol.records import Record, build_record_batch, iter_record_batches
from odradek.protocol.records.control import read_end_transaction_marker
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from odradek.storage.fetch import FetchIsolation
from tests.support.fake_broker import FakeBroker, Received
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)


def _coordinator(broker: HandlerBroker, cluster_member: bool = False) -> TransactionCoordinator:
    services = broker.services
    internal_topics = (ZkInternalTopics if cluster_member else SingleNodeInternalTopics)(
        services.topics, services.cluster
    )
    return TransactionCoordinator(
        services.config,
        services.cluster,
        internal_topics,
        services.logs,
        services.node_id,
        services.producer_ids,
        None,
        leadership=services.leadership,
        marker_sender=InterBrokerTxnMarkerSender(services.config, services.cluster, services.node_id),
    )


@pytest.mark.parametrize("committed", [True, False])
async def test_a_prepared_transaction_is_completed_when_its_partition_is_loaded(
    handler_broker: HandlerBroker, committed: bool
) -> None:
    await handler_broker.create_topic("data")
    first = _coordinator(handler_broker)
    await first.start()
    pid, epoch = await first.init_producer_id("prepared", 60000, -1, -1)
    assert await first.add_partitions("prepared", pid, epoch, [("data", 0)]) == {("data", 0): ErrorCode.NONE}
    record = Record(offset=0, timestamp=1_700_000_000_000, key=None, value=b"in the transaction")
    batch = build_record_batch(
        [record], producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True
    )
    handler_broker.log("data").append(bytearray(batch))
    # The broker "dies" right after writing PrepareCommit/PrepareAbort: no marker, no Complete*.
    metadata = first.state_log.txns["prepared"]
    prepared = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
    value = metadata.next_value(first.now_ms(), state=prepared)
    assert await first.state_log.append(TxnLogRecord("prepared", value)) is None
    first.stop()
    assert handler_broker.log("data").last_stable_offset == 0  # still open in the partition

    second = _coordinator(handler_broker)
    await second.start()
    try:
        log = handler_broker.log("data")
        done = TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT
        for _ in range(100):  # completed in the background, as soon as the partition is loaded
            if second.state_log.txns["prepared"].state is done:
                break
            await asyncio.sleep(0.01)
        assert log.last_stable_offset == log.log_end_offset == 2
        info = log.read(1, 1 << 20, isolation=FetchIsolation.LOG_END, min_one_message=True)
        [marker_batch] = list(iter_record_batches(info.read_bytes()))
        marker = read_end_transaction_marker(marker_batch)
        assert (marker.control_type.name, marker_batch.producer_id) == (
            "COMMIT" if committed else "ABORT",
            pid,
        )
        assert second.state_log.txns["prepared"].state is done
        assert second.state_log.txns["prepared"].partitions == set()
    finally:
        second.stop()


async def test_an_exhausted_epoch_gets_a_new_producer_id(handler_broker: HandlerBroker) -> None:
    coordinator = _coordinator(handler_broker)
    await coordinator.start()
    try:
        pid, _ = await coordinator.init_producer_id("old", 60000, -1, -1)
        metadata = coordinator.state_log.txns["old"]
        last_epoch = metadata.next_value(coordinator.now_ms(), producer_epoch=MAX_EPOCH - 1)
        await coordinator.state_log.write("old", last_epoch)
        assert await coordinator.init_producer_id("old", 60000, -1, -1) == (pid, MAX_EPOCH)
        new_pid, epoch = await coordinator.init_producer_id("old", 60000, -1, -1)
        assert new_pid != pid and epoch == 0
        assert coordinator.by_producer_id(new_pid) is coordinator.state_log.txns["old"]
        assert coordinator.by_producer_id(pid) is None
    finally:
        coordinator.stop()


async def test_a_coordinator_taking_over_sends_the_markers_of_partitions_led_elsewhere(
    handler_broker: HandlerBroker,
) -> None:
    """Cluster mode: the prepared transaction's partition is led by broker 2, so the new coordinator
    sends it WriteTxnMarkers and writes CompleteCommit only once broker 2 has answered."""
    await handler_broker.create_topic("remote")
    first = _coordinator(handler_broker)
    await first.start()
    pid, epoch = await first.init_producer_id("spread", 60000, -1, -1)
    await first.add_partitions("spread", pid, epoch, [("remote", 0)])
    metadata = first.state_log.txns["spread"]
    value = metadata.next_value(first.now_ms(), state=TxnState.PREPARE_COMMIT)
    assert await first.state_log.append(TxnLogRecord("spread", value)) is None
    first.stop()

    answers: list[ErrorCode] = [ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE]
    fake = await FakeBroker(2).start()

    async def respond(received: Received) -> WriteTxnMarkersResponse:
        request: WriteTxnMarkersRequest = received.body
        (marker,) = request.markers
        error = answers.pop(0)
        return WriteTxnMarkersResponse(
            markers=[
                WritableTxnMarkerResult(
                    producer_id=marker.producer_id,
                    topics=[
                        WritableTxnMarkerTopicResult(
                            name="remote",
                            partitions=[
                                WritableTxnMarkerPartitionResult(partition_index=0, error_code=error)
                            ],
                        )
                    ],
                )
            ]
        )

    fake.responder = respond
    cluster = handler_broker.services.cluster
    cluster.live_brokers = {2: LiveBroker(2, {"PLAINTEXT": BrokerEndpoint(2, fake.host, fake.port)})}
    partition = cluster.partition("remote", 0)
    assert partition is not None
    partition.leader_id = 2
    second = _coordinator(handler_broker, cluster_member=True)
    await second.start()
    try:
        await fake.wait_for(lambda b: len(b.requests_of(ApiKey.WRITE_TXN_MARKERS)) == 2)
        for _ in range(100):
            if second.state_log.txns["spread"].state is TxnState.COMPLETE_COMMIT:
                break
            await asyncio.sleep(0.02)
        assert second.state_log.txns["spread"].state is TxnState.COMPLETE_COMMIT
        sent = fake.requests_of(ApiKey.WRITE_TXN_MARKERS)[-1].markers[0]
        assert (sent.producer_id, sent.producer_epoch, sent.transaction_result) == (pid, epoch, True)
        assert handler_broker.log("remote").log_end_offset == 0  # nothing written here
    finally:
        second.stop()
        await fake.stop()
