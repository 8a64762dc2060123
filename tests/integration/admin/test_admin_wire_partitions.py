"""DeleteRecords, OffsetForLeaderEpoch, DescribeLogDirs and DescribeCluster at every version, over raw
frames (kafka-python's protocol classes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.protocol.admin import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeClusterRequest,
    DescribeLogDirsRequest,
)
from kafka.protocol.consumer import OffsetForLeaderEpochRequest
from kafka.protocol.metadata import MetadataRequest

from tests.integration.admin.wire import Wire
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(60)

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
MISMATCHED_ENDPOINT_TYPE = 114
UNSUPPORTED_ENDPOINT_TYPE = 115


@pytest.fixture(scope="module")
def producer(admin_broker: BrokerProcess) -> Iterator[KafkaProducer]:
    client = KafkaProducer(bootstrap_servers=admin_broker.bootstrap, linger_ms=0)
    try:
        yield client
    finally:
        client.close()


def make_topic(wire: Wire, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    topic = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(
        topics=[
            topic(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                assignments=[],
                configs=[topic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
            )
        ],
        timeout_ms=10_000,
        validate_only=False,
    )
    assert wire.send(request, 5).topics[0].error_code == NONE


def produce(producer: KafkaProducer, topic: str, count: int, partition: int = 0) -> None:
    for i in range(count):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, partition=partition)
    producer.flush(10)


# ----- DeleteRecords ---------------------------------------------------------------------------------


def delete_records(
    wire: Wire, version: int, wanted: dict[str, dict[int, int]]
) -> dict[tuple[str, int], tuple[int, int]]:
    topic = DeleteRecordsRequest.DeleteRecordsTopic
    request = DeleteRecordsRequest(
        topics=[
            topic(
                name=name,
                partitions=[
                    topic.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets.items()
                ],
            )
            for name, offsets in wanted.items()
        ],
        timeout_ms=10_000,
    )
    return {
        (t.name, p.partition_index): (p.error_code, p.low_watermark)
        for t in wire.send(request, version).topics
        for p in t.partitions
    }


@pytest.mark.parametrize("version", range(3))
def test_delete_records_at_every_version(wire: Wire, producer: KafkaProducer, version: int) -> None:
    name = f"records-v{version}"
    make_topic(wire, name, partitions=2)
    produce(producer, name, 10, partition=0)
    produce(producer, name, 3, partition=1)
    assert delete_records(wire, version, {name: {0: 4, 1: -1}}) == {
        (name, 0): (NONE, 4),
        (name, 1): (NONE, 3),
    }
    assert delete_records(wire, version, {name: {0: 2}}) == {(name, 0): (NONE, 4)}  # never moves back
    assert delete_records(wire, version, {name: {0: 11}}) == {(name, 0): (OFFSET_OUT_OF_RANGE, -1)}
    assert delete_records(wire, version, {name: {0: -2}}) == {(name, 0): (OFFSET_OUT_OF_RANGE, -1)}
    assert delete_records(wire, version, {name: {0: 10}}) == {(name, 0): (NONE, 10)}


def test_delete_records_errors(wire: Wire, producer: KafkaProducer) -> None:
    make_topic(wire, "records-compacted", configs={"cleanup.policy": "compact"})
    make_topic(wire, "records-both", configs={"cleanup.policy": "compact,delete"})
    produce(producer, "records-both", 2)
    internal = "__consumer_offsets" in {t.name for t in wire.send(MetadataRequest(topics=None), 1).topics}
    results = delete_records(
        wire,
        2,
        {
            "records-compacted": {0: 0},
            "records-both": {0: 1},
            "records-no-such-topic": {0: 0},
            "records-v2": {7: 0},
            **({"__consumer_offsets": {0: 0}} if internal else {}),
        },
    )
    expected = {
        ("records-compacted", 0): (POLICY_VIOLATION, -1),
        ("records-both", 0): (NONE, 1),
        ("records-no-such-topic", 0): (UNKNOWN_TOPIC_OR_PARTITION, -1),
        ("records-v2", 7): (UNKNOWN_TOPIC_OR_PARTITION, -1),
    }
    if internal:
        expected[("__consumer_offsets", 0)] = (INVALID_TOPIC_EXCEPTION, -1)
    assert results == expected


# ----- OffsetForLeaderEpoch --------------------------------------------------------------------------


def end_offsets(
    wire: Wire, version: int, topic: str, *asks: tuple[int, int, int], replica_id: int = -1
) -> list[Any]:
    """asks: (partition, current leader epoch, leader epoch)."""
    request_topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    request = OffsetForLeaderEpochRequest(
        replica_id=replica_id,
        topics=[
            request_topic(
                topic=topic,
                partitions=[
                    request_topic.OffsetForLeaderPartition(
                        partition=p, current_leader_epoch=c, leader_epoch=e
                    )
                    for p, c, e in asks
                ],
            )
        ],
    )
    response = wire.send(request, version)
    assert [t.topic for t in response.topics] == [topic]
    return list(response.topics[0].partitions)


@pytest.mark.parametrize("version", range(5))
def test_offset_for_leader_epoch_at_every_version(wire: Wire, producer: KafkaProducer, version: int) -> None:
    name = f"epochs-v{version}"
    make_topic(wire, name)
    empty = end_offsets(wire, version, name, (0, -1, 0))[0]
    assert (empty.error_code, empty.end_offset) == (NONE, 0)
    produce(producer, name, 7)
    found = end_offsets(wire, version, name, (0, -1, 0), (0, -1, 3), (0, -1, -1), (5, -1, 0))
    assert [(p.partition, p.error_code, p.end_offset) for p in found] == [
        (0, NONE, 7),
        (0, NONE, -1),
        (0, NONE, -1),
        (5, UNKNOWN_TOPIC_OR_PARTITION, -1),
    ]
    if version >= 1:
        assert [p.leader_epoch for p in found] == [0, -1, -1, -1]
    if version >= 2:
        fencing = end_offsets(wire, version, name, (0, 0, 0), (0, 1, 0), (0, -2, 0))
        assert [(p.error_code, p.end_offset) for p in fencing] == [
            (NONE, 7),
            (UNKNOWN_LEADER_EPOCH, -1),  # the client knows a newer epoch than this broker
            (FENCED_LEADER_EPOCH, -1),  # the client's epoch is older than the partition's
        ]
    if version >= 3:
        follower = end_offsets(wire, version, name, (0, 0, 0), replica_id=1)[0]
        assert (follower.error_code, follower.end_offset) == (NONE, 7)
    unknown = end_offsets(wire, version, "epochs-no-such-topic", (0, -1, 0))[0]
    assert unknown.error_code == UNKNOWN_TOPIC_OR_PARTITION


# ----- DescribeLogDirs -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(6))
def test_describe_log_dirs_at_every_version(
    wire: Wire, producer: KafkaProducer, admin_broker: BrokerProcess, version: int
) -> None:
    name = f"dirs-v{version}"
    make_topic(wire, name, partitions=2)
    produce(producer, name, 5, partition=1)
    wanted = DescribeLogDirsRequest.DescribableLogDirTopic
    everything = wire.send(DescribeLogDirsRequest(topics=None), version)
    some = wire.send(
        DescribeLogDirsRequest(
            topics=[wanted(topic=name, partitions=[1, 9]), wanted(topic="dirs-none", partitions=[0])]
        ),
        version,
    )
    for response in (everything, some):
        if version >= 3:
            assert response.error_code == NONE
        [result] = response.results
        assert (result.error_code, result.log_dir) == (NONE, str(admin_broker.data_dir.absolute()))
        if version >= 4:
            assert result.total_bytes >= result.usable_bytes > 0
        if version >= 5:
            assert result.is_cordoned is False
    partitions = {(t.name, p.partition_index): p for t in everything.results[0].topics for p in t.partitions}
    assert partitions[(name, 0)].partition_size == 0 < partitions[(name, 1)].partition_size
    assert {(p.offset_lag, p.is_future_key) for p in partitions.values()} == {(0, False)}
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in some.results[0].topics] == [
        (name, [1])
    ]


# ----- DescribeCluster -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(3))
def test_describe_cluster_at_every_version(wire: Wire, admin_broker: BrokerProcess, version: int) -> None:
    request = DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=1, include_fenced_brokers=True
    )
    response = wire.send(request, version)
    metadata = wire.send(MetadataRequest(topics=[]), 2)
    assert (response.error_code, response.error_message) == (NONE, None)
    assert (response.cluster_id, response.controller_id) == (metadata.cluster_id, 1)
    host, port = admin_broker.bootstrap.rsplit(":", 1)
    assert [(b.broker_id, b.host, b.port, b.rack) for b in response.brokers] == [(1, host, int(port), None)]
    assert response.authorized_operations is None  # kafka-python shows the "omitted" value as None
    if version >= 1:
        assert response.endpoint_type == 1
    if version >= 2:
        assert [b.is_fenced for b in response.brokers] == [False]
    asked = wire.send(
        DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1), version
    )
    assert asked.authorized_operations


def test_describe_cluster_endpoint_types(wire: Wire) -> None:
    controller = wire.send(
        DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=2), 1
    )
    assert controller.error_code == MISMATCHED_ENDPOINT_TYPE
    assert controller.error_message == (
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
    )
    unknown = wire.send(
        DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=7), 2
    )
    assert (unknown.error_code, unknown.error_message) == (
        UNSUPPORTED_ENDPOINT_TYPE,
        "Unsupported endpoint type 7",
    )
