"""Describe topic partitions: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Nested, Request, Response, String, Struct, Uuid


class TopicRequest(Struct):
    name: str = String()


class Cursor(Struct):
    topic_name: str = String()
    partition_index: int = Int32()


class DescribeTopicPartitionsResponsePartition(Struct):
    error_code: int = Int16()
    partition_index: int = Int32()
    leader_id: int = Int32()
    leader_epoch: int = Int32(default=-1)
    replica_nodes: list[int] = Array("int32")
    isr_nodes: list[int] = Array("int32")
    eligible_leader_replicas: list[int] | None = Array("int32", nullable="0+", default=None)
    last_known_elr: list[int] | None = Array("int32", nullable="0+", default=None)
    offline_replicas: list[int] = Array("int32")


class DescribeTopicPartitionsResponseTopic(Struct):
    error_code: int = Int16()
    name: str | None = String(nullable="0+")
    topic_id: UUID = Uuid()
    is_internal: bool = Bool(default=False)
    partitions: list[DescribeTopicPartitionsResponsePartition] = Array(
        DescribeTopicPartitionsResponsePartition
    )
    topic_authorized_operations: int = Int32(default=-2147483648)


class DescribeTopicPartitionsRequest(Request, api_key=75, versions="0", flexible="0+"):
    topics: list[TopicRequest] = Array(TopicRequest)
    response_partition_limit: int = Int32(default=2000)
    cursor: Cursor | None = Nested(Cursor, nullable="0+", default=None)


class DescribeTopicPartitionsResponse(Response, api_key=75, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    topics: list[DescribeTopicPartitionsResponseTopic] = Array(DescribeTopicPartitionsResponseTopic)
    next_cursor: Cursor | None = Nested(Cursor, nullable="0+", default=None)
