"""Streams group describe: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import (
    Array,
    Bool,
    Int16,
    Int32,
    Int64,
    Nested,
    Request,
    Response,
    String,
    Struct,
    UInt16,
)


class KeyValue(Struct):
    key: str = String()
    value: str = String()


class TopicInfo(Struct):
    name: str = String()
    partitions: int = Int32()
    replication_factor: int = Int16()
    topic_configs: list[KeyValue] = Array(KeyValue)


class Subtopology(Struct):
    subtopology_id: str = String()
    source_topics: list[str] = Array("string")
    repartition_sink_topics: list[str] = Array("string")
    state_changelog_topics: list[TopicInfo] = Array(TopicInfo)
    repartition_source_topics: list[TopicInfo] = Array(TopicInfo)


class Topology(Struct):
    epoch: int = Int32()
    subtopologies: list[Subtopology] | None = Array(Subtopology, nullable="0+", default=None)


class Endpoint(Struct):
    host: str = String()
    port: int = UInt16()


class TaskOffset(Struct):
    subtopology_id: str = String()
    partition: int = Int32()
    offset: int = Int64()


class TaskIds(Struct):
    subtopology_id: str = String()
    partitions: list[int] = Array("int32")


class Assignment(Struct):
    active_tasks: list[TaskIds] = Array(TaskIds)
    standby_tasks: list[TaskIds] = Array(TaskIds)
    warmup_tasks: list[TaskIds] = Array(TaskIds)


class Member(Struct):
    member_id: str = String()
    member_epoch: int = Int32()
    instance_id: str | None = String(nullable="0+", default=None)
    rack_id: str | None = String(nullable="0+", default=None)
    client_id: str = String()
    client_host: str = String()
    topology_epoch: int = Int32()
    process_id: str = String()
    user_endpoint: Endpoint | None = Nested(Endpoint, nullable="0+", default=None)
    client_tags: list[KeyValue] = Array(KeyValue)
    task_offsets: list[TaskOffset] = Array(TaskOffset)
    task_end_offsets: list[TaskOffset] = Array(TaskOffset)
    assignment: Assignment = Nested(Assignment)
    target_assignment: Assignment = Nested(Assignment)
    is_classic: bool = Bool()


class DescribedGroup(Struct):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    group_id: str = String()
    group_state: str = String()
    group_epoch: int = Int32()
    assignment_epoch: int = Int32()
    topology: Topology | None = Nested(Topology, nullable="0+", default=None)
    members: list[Member] = Array(Member)
    authorized_operations: int = Int32(default=-2147483648)


class StreamsGroupDescribeRequest(Request, api_key=89, versions="0", flexible="0+"):
    group_ids: list[str] = Array("string")
    include_authorized_operations: bool = Bool()


class StreamsGroupDescribeResponse(Response, api_key=89, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    groups: list[DescribedGroup] = Array(DescribedGroup)
