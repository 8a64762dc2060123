"""partition/'s entry for DeleteRecords (KIP-107; Kafka's Partition.deleteRecordsOnLeader): the log
start of a partition this broker leads moves up to the offset asked (-1: its high watermark), and the
leader, cleanup-policy and offset rules are the entry's."""

from __future__ import annotations

import pytest

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.delete_records import HIGH_WATERMARK, delete_records
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin


def _led(logs: LogManager, records: int) -> ReplicaManager:
    """Partition t-0 led here alone (its high watermark follows its log end), `records` in it."""
    replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), logs)
    logs.get_or_create_log("t", 0)
    replicas.lead_alone("t", None, [0])
    for i in range(records):
        builder = RecordBatchBuilder(0)
        builder.append(1_700_000_000_000, None, b"v%d" % i)
        replicas.append_records(TopicPartition("t", 0), bytearray(builder.build()), AppendOrigin.CLIENT, 1)
    return replicas


def _refused(replicas: ReplicaManager, topic: str, offset: int) -> ErrorCode:
    with pytest.raises(KafkaError) as refused:
        delete_records(replicas, replicas.logs, topic, 0, offset)
    return refused.value.error_code


def test_the_log_start_of_a_partition_led_here_moves_to_the_offset_or_the_high_watermark(
    logs: LogManager,
) -> None:
    replicas = _led(logs, 5)
    assert delete_records(replicas, replicas.logs, "t", 0, 2) == 2
    assert replicas.leading[("t", 0)].log.log_start_offset == 2
    assert delete_records(replicas, replicas.logs, "t", 0, HIGH_WATERMARK) == 5


def test_a_partition_not_led_here_is_refused(logs: LogManager) -> None:
    replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), logs)
    assert _refused(replicas, "t", 0) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # no log here
    logs.get_or_create_log("t", 0)  # a replica here, led elsewhere
    assert _refused(replicas, "t", 0) is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_compacted_topic_and_a_negative_offset_are_refused(logs: LogManager) -> None:
    replicas = _led(logs, 3)
    assert _refused(replicas, "t", -2) is ErrorCode.OFFSET_OUT_OF_RANGE
    logs.apply_topic_config("t", LogConfig.from_mapping({"cleanup.policy": "compact"}))
    assert _refused(replicas, "t", 1) is ErrorCode.POLICY_VIOLATION
    assert replicas.leading[("t", 0)].log.log_start_offset == 0
