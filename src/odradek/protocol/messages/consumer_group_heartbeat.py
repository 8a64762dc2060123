"""Consumer group heartbeat: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Nested, Request, Response, String, Struct, Uuid


class TopicPartitions(Struct):
    topic_id: UUID = Uuid()
    partitions: list[int] = Array("int32")


class Assignment(Struct):
    topic_partitions: list[TopicPartitions] = Array(TopicPartitions)


class ConsumerGroupHeartbeatRequest(Request, api_key=68, versions="0-1", flexible="0+"):
    group_id: str = String()
    member_id: str = String()
    member_epoch: int = Int32()
    instance_id: str | None = String(nullable="0+", default=None)
    rack_id: str | None = String(nullable="0+", default=None)
    rebalance_timeout_ms: int = Int32(default=-1)
    subscribed_topic_names: list[str] | None = Array("string", nullable="0+", default=None)
    subscribed_topic_regex: str | None = String("1+", nullable="1+", default=None)
    server_assignor: str | None = String(nullable="0+", default=None)
    topic_partitions: list[TopicPartitions] | None = Array(TopicPartitions, nullable="0+", default=None)


class ConsumerGroupHeartbeatResponse(Response, api_key=68, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    member_id: str | None = String(nullable="0+", default=None)
    member_epoch: int = Int32()
    heartbeat_interval_ms: int = Int32()
    assignment: Assignment | None = Nested(Assignment, nullable="0+", default=None)
