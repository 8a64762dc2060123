"""Requests whose fields decode but make no sense (negative partitions, empty or invalid topic names,
non-positive or enormous counts, duplicates, unknown enum values) each get the error code Kafka gives,
never UNKNOWN_SERVER_ERROR, an exception or a closed connection. One row per case: the request, the
version it is sent at, and the error codes of the response in order (top-level codes included).

The rows marked "before:" broke: CreateTopics or CreatePartitions asking for 2^31-1 partitions had the
broker make partition directories until it was stopped (Kafka's controller refuses any request that
would make more than 10,000 metadata records, with POLICY_VIOLATION); a topic named twice in one
Metadata request was described twice (Kafka asks for a set of topics), and a partition named twice in a
Fetch was read and answered twice (Kafka keys a fetch by topic partition).
"""

from __future__ import annotations

from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from odradek.protocol.schema import Struct
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(60)

TOPIC = "t"  # made with two partitions before each row
INT32_MAX = 2**31 - 1
E = ErrorCode


def produce(topic: str, partition: int) -> ProduceRequest:
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, b"v")
    data = [PartitionProduceData(index=partition, records=builder.build())]
    return ProduceRequest(
        acks=1, timeout_ms=1000, topic_data=[TopicProduceData(name=topic, partition_data=data)]
    )


def fetch(
    topic: str, partition: int, offset: int = 0, partition_max_bytes: int = 1 << 20, times: int = 1
) -> FetchRequest:
    wanted = FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes)
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=50 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[FetchTopic(topic=topic, partitions=[wanted] * times)],
        forgotten_topics_data=[],
    )


def list_offsets(topic: str, *partitions: int) -> ListOffsetsRequest:
    wanted = [ListOffsetsPartition(partition_index=p, timestamp=-1) for p in partitions]
    return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=topic, partitions=wanted)])


def metadata(*names: str | None) -> MetadataRequest:
    return MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=True
    )


def delete_records(topic: str, partition: int, offset: int) -> DeleteRecordsRequest:
    wanted = [DeleteRecordsPartition(partition_index=partition, offset=offset)]
    return DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=topic, partitions=wanted)], timeout_ms=1000)


def offset_for_leader_epoch(partition: int, epoch: int) -> OffsetForLeaderEpochRequest:
    wanted = [OffsetForLeaderPartition(partition=partition, leader_epoch=epoch)]
    return OffsetForLeaderEpochRequest(topics=[OffsetForLeaderTopic(topic=TOPIC, partitions=wanted)])


def create_topics(*topics: tuple[str, int]) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                assignments=[],
                configs=[],
            )
            for name, partitions in topics
        ],
        timeout_ms=1000,
        validate_only=True,
    )


def create_partitions(*topics: tuple[str, int], assignments: int | None = None) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(
        topics=[
            CreatePartitionsTopic(
                name=name,
                count=count,
                assignments=None
                if assignments is None
                else [CreatePartitionsAssignment(broker_ids=[1]) for _ in range(assignments)],
            )
            for name, count in topics
        ],
        timeout_ms=1000,
        validate_only=True,
    )


def describe_configs(resource_type: int, name: str) -> DescribeConfigsRequest:
    resource = DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None
    )
    return DescribeConfigsRequest(resources=[resource])


def alter_configs(resource_type: int, name: str, operation: int = 0, value: str | None = "1000") -> Any:
    config = AlterableConfig(name="retention.ms", config_operation=operation, value=value)
    resource = AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=[config])
    return IncrementalAlterConfigsRequest(resources=[resource], validate_only=True)


CASES: list[tuple[str, Any, int, list[ErrorCode]]] = [
    ("produce to partition -1", produce(TOPIC, -1), 9, [E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("produce to a partition past the count", produce(TOPIC, 2), 9, [E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("produce to the empty topic name", produce("", 0), 9, [E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("fetch partition -1", fetch(TOPIC, -1), 12, [E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("fetch a negative offset", fetch(TOPIC, 0, offset=-5), 12, [E.NONE, E.OFFSET_OUT_OF_RANGE]),
    (
        "fetch with the largest partition_max_bytes",
        fetch(TOPIC, 0, partition_max_bytes=INT32_MAX),
        12,
        [E.NONE, E.NONE],
    ),
    ("fetch with partition_max_bytes 0", fetch(TOPIC, 0, partition_max_bytes=0), 12, [E.NONE, E.NONE]),
    ("fetch from the empty topic name", fetch("", 0), 12, [E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("before: fetch one partition twice", fetch(TOPIC, 0, times=2), 12, [E.NONE, E.NONE]),
    ("before: fetch one partition twice, v0", fetch(TOPIC, 0, times=2), 0, [E.NONE, E.NONE]),
    ("list offsets of partition -1", list_offsets(TOPIC, -1), 5, [E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("list offsets of one partition twice", list_offsets(TOPIC, 0, 0), 5, [E.NONE, E.INVALID_REQUEST]),
    ("metadata of the empty topic name", metadata(""), 9, [E.INVALID_TOPIC_EXCEPTION, E.NONE]),
    ("metadata of an invalid topic name", metadata("bad name!"), 9, [E.INVALID_TOPIC_EXCEPTION, E.NONE]),
    ("metadata of a 250-character name", metadata("x" * 250), 9, [E.INVALID_TOPIC_EXCEPTION, E.NONE]),
    ("metadata of a null name by a zero id", metadata(None), 12, [E.UNKNOWN_TOPIC_ID, E.NONE]),
    (
        "before: metadata of one topic twice",
        metadata(TOPIC, TOPIC),
        9,
        [E.NONE] * 4,
    ),  # topic, 2 partitions, top level
    ("delete records of partition -1", delete_records(TOPIC, -1, 0), 2, [E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("delete records below -1", delete_records(TOPIC, 0, -5), 2, [E.OFFSET_OUT_OF_RANGE]),
    ("delete records past the end", delete_records(TOPIC, 0, 2**62), 2, [E.OFFSET_OUT_OF_RANGE]),
    (
        "offset for leader epoch of partition -1",
        offset_for_leader_epoch(-1, 0),
        4,
        [E.UNKNOWN_TOPIC_OR_PARTITION],
    ),
    ("offset for leader epoch -5", offset_for_leader_epoch(0, -5), 4, [E.NONE]),
    ("create a topic of 0 partitions", create_topics(("zero", 0)), 5, [E.INVALID_PARTITIONS]),
    ("create a topic of -5 partitions", create_topics(("negative", -5)), 5, [E.INVALID_PARTITIONS]),
    ("create a topic with the empty name", create_topics(("", 1)), 5, [E.INVALID_TOPIC_EXCEPTION]),
    ("create a topic named ..", create_topics(("..", 1)), 5, [E.INVALID_TOPIC_EXCEPTION]),
    ("create one topic twice", create_topics(("twice", 1), ("twice", 1)), 5, [E.INVALID_REQUEST]),
    (
        "before: create a topic of 2^31-1 partitions",
        create_topics(("huge", INT32_MAX)),
        5,
        [E.POLICY_VIOLATION],
    ),
    (
        "before: create topics of 10,001 records in all",
        create_topics(("a", 5000), ("b", 4999)),  # 2 topic records and 9,999 partition records
        5,
        [E.POLICY_VIOLATION, E.POLICY_VIOLATION],
    ),
    (
        "create topics of 10,000 records in all",
        create_topics(("a", 4999), ("b", 4999)),  # 2 topic records and 9,998 partition records
        5,
        [E.NONE, E.NONE],
    ),
    ("grow a topic to -1 partitions", create_partitions((TOPIC, -1)), 3, [E.INVALID_PARTITIONS]),
    ("grow a topic to its own count", create_partitions((TOPIC, 2)), 3, [E.INVALID_PARTITIONS]),
    (
        "before: grow a topic to 2^31-1 partitions",
        create_partitions((TOPIC, INT32_MAX)),
        3,
        [E.POLICY_VIOLATION],
    ),
    (
        "grow with too few assignments",
        create_partitions((TOPIC, 4), assignments=1),
        3,
        [E.INVALID_REPLICA_ASSIGNMENT],
    ),
    ("grow the empty topic name", create_partitions(("", 3)), 3, [E.UNKNOWN_TOPIC_OR_PARTITION]),
    ("grow one topic twice", create_partitions((TOPIC, 3), (TOPIC, 3)), 3, [E.INVALID_REQUEST]),
    ("describe configs of resource type 99", describe_configs(99, "x"), 4, [E.INVALID_REQUEST]),
    ("describe configs of broker 'abc'", describe_configs(4, "abc"), 4, [E.INVALID_REQUEST]),
    ("describe configs of the empty topic name", describe_configs(2, ""), 4, [E.INVALID_TOPIC_EXCEPTION]),
    ("alter configs with operation 9", alter_configs(2, TOPIC, operation=9), 1, [E.INVALID_REQUEST]),
    ("alter configs of resource type 99", alter_configs(99, TOPIC), 1, [E.INVALID_REQUEST]),
    ("alter configs setting null", alter_configs(2, TOPIC, value=None), 1, [E.INVALID_REQUEST]),
    ("alter configs of the empty topic name", alter_configs(2, ""), 1, [E.INVALID_REQUEST]),
]


@pytest.mark.parametrize(
    ("request_body", "version", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_malformed_request_fields_get_kafkas_error_codes(
    handler_broker: HandlerBroker, request_body: Any, version: int, expected: list[ErrorCode]
) -> None:
    await handler_broker.create_topic(TOPIC, partitions=2)
    response = await handler_broker.call(request_body, version)
    assert error_codes(response) == expected
    assert handler_broker.log(TOPIC).log_end_offset == 0  # nothing was appended by these requests
    assert sorted(handler_broker.services.cluster.topics) == [TOPIC]  # nor created (validate_only)


def error_codes(message: Struct) -> list[ErrorCode]:
    """Every error code in `message`, depth first, in field order."""
    codes: list[ErrorCode] = []
    for spec in type(message).FIELDS:  # type: ignore[attr-defined]
        value = getattr(message, spec.name)
        if spec.name == "error_code":
            codes.append(ErrorCode(value))
        elif isinstance(value, Struct):
            codes += error_codes(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, Struct):
                    codes += error_codes(item)
    return codes
