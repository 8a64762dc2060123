"""Create topics: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int8, Int16, Int32, Request, Response, String, Struct, Uuid


class CreatableReplicaAssignment(Struct):
    partition_index: int = Int32()
    broker_ids: list[int] = Array("int32")


class CreatableTopicConfig(Struct):
    name: str = String()
    value: str | None = String(nullable="0+")


class CreatableTopic(Struct):
    name: str = String()
    num_partitions: int = Int32()
    replication_factor: int = Int16()
    assignments: list[CreatableReplicaAssignment] = Array(CreatableReplicaAssignment)
    configs: list[CreatableTopicConfig] = Array(CreatableTopicConfig)


class CreatableTopicConfigs(Struct):
    name: str = String("5+")
    value: str | None = String("5+", nullable="5+")
    read_only: bool = Bool("5+")
    config_source: int = Int8("5+", default=-1)
    is_sensitive: bool = Bool("5+")


class CreatableTopicResult(Struct):
    name: str = String()
    topic_id: UUID = Uuid("7+")
    error_code: int = Int16()
    error_message: str | None = String("1+", nullable="1+")
    topic_config_error_code: int = Int16("5+", tag=0)
    num_partitions: int = Int32("5+", default=-1)
    replication_factor: int = Int16("5+", default=-1)
    configs: list[CreatableTopicConfigs] | None = Array(CreatableTopicConfigs, "5+", nullable="5+")


class CreateTopicsRequest(Request, api_key=19, versions="0-7", flexible="5+"):
    topics: list[CreatableTopic] = Array(CreatableTopic)
    timeout_ms: int = Int32(default=60000)
    validate_only: bool = Bool("1+", default=False)


class CreateTopicsResponse(Response, api_key=19, versions="0-7", flexible="5+"):
    throttle_time_ms: int = Int32("2+")
    topics: list[CreatableTopicResult] = Array(CreatableTopicResult)
