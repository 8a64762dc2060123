"""Streams group heartbeat: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import (
    Array,
    Bool,
    Int8,
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


class CopartitionGroup(Struct):
    source_topics: list[int] = Array("int16")
    source_topic_regex: list[int] = Array("int16")
    repartition_source_topics: list[int] = Array("int16")


class Subtopology(Struct):
    subtopology_id: str = String()
    source_topics: list[str] = Array("string")
    source_topic_regex: list[str] = Array("string")
    state_changelog_topics: list[TopicInfo] = Array(TopicInfo)
    repartition_sink_topics: list[str] = Array("string")
    repartition_source_topics: list[TopicInfo] = Array(TopicInfo)
    copartition_groups: list[CopartitionGroup] = Array(CopartitionGroup)


class Topology(Struct):
    epoch: int = Int32()
    subtopologies: list[Subtopology] = Array(Subtopology)


class TaskIds(Struct):
    subtopology_id: str = String()
    partitions: list[int] = Array("int32")


class Endpoint(Struct):
    host: str = String()
    port: int = UInt16()


class TaskOffset(Struct):
    subtopology_id: str = String()
    partition: int = Int32()
    offset: int = Int64()


class Status(Struct):
    status_code: int = Int8()
    status_detail: str = String()


class TopicPartition(Struct):
    topic: str = String()
    partitions: list[int] = Array("int32")


class EndpointToPartitions(Struct):
    user_endpoint: Endpoint = Nested(Endpoint)
    active_partitions: list[TopicPartition] = Array(TopicPartition)
    standby_partitions: list[TopicPartition] = Array(TopicPartition)


class StreamsGroupHeartbeatRequest(Request, api_key=88, versions="0", flexible="0+"):
    group_id: str = String()
    member_id: str = String()
    member_epoch: int = Int32()
    endpoint_information_epoch: int = Int32()
    instance_id: str | None = String(nullable="0+", default=None)
    rack_id: str | None = String(nullable="0+", default=None)
    rebalance_timeout_ms: int = Int32(default=-1)
    topology: Topology | None = Nested(Topology, nullable="0+", default=None)
    active_tasks: list[TaskIds] | None = Array(TaskIds, nullable="0+", default=None)
    standby_tasks: list[TaskIds] | None = Array(TaskIds, nullable="0+", default=None)
    warmup_tasks: list[TaskIds] | None = Array(TaskIds, nullable="0+", default=None)
    process_id: str | None = String(nullable="0+", default=None)
    user_endpoint: Endpoint | None = Nested(Endpoint, nullable="0+", default=None)
    client_tags: list[KeyValue] | None = Array(KeyValue, nullable="0+", default=None)
    task_offsets: list[TaskOffset] | None = Array(TaskOffset, nullable="0+", default=None)
    task_end_offsets: list[TaskOffset] | None = Array(TaskOffset, nullable="0+", default=None)
    shutdown_application: bool = Bool(default=False)


class StreamsGroupHeartbeatResponse(Response, api_key=88, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    member_id: str = String()
    member_epoch: int = Int32()
    heartbeat_interval_ms: int = Int32()
    acceptable_recovery_lag: int = Int32()
    task_offset_interval_ms: int = Int32()
    status: list[Status] | None = Array(Status, nullable="0+")
    active_tasks: list[TaskIds] | None = Array(TaskIds, nullable="0+", default=None)
    standby_tasks: list[TaskIds] | None = Array(TaskIds, nullable="0+", default=None)
    warmup_tasks: list[TaskIds] | None = Array(TaskIds, nullable="0+", default=None)
    endpoint_information_epoch: int = Int32()
    partitions_by_user_endpoint: list[EndpointToPartitions] | None = Array(
        EndpointToPartitions, nullable="0+", default=None
    )
