"""Share group describe: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Nested, Request, Response, String, Struct, Uuid


class TopicPartitions(Struct):
    topic_id: UUID = Uuid()
    topic_name: str = String()
    partitions: list[int] = Array("int32")


class Assignment(Struct):
    topic_partitions: list[TopicPartitions] = Array(TopicPartitions)


class Member(Struct):
    member_id: str = String()
    rack_id: str | None = String(nullable="0+", default=None)
    member_epoch: int = Int32()
    client_id: str = String()
    client_host: str = String()
    subscribed_topic_names: list[str] = Array("string")
    assignment: Assignment = Nested(Assignment)


class DescribedGroup(Struct):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    group_id: str = String()
    group_state: str = String()
    group_epoch: int = Int32()
    assignment_epoch: int = Int32()
    assignor_name: str = String()
    members: list[Member] = Array(Member)
    authorized_operations: int = Int32(default=-2147483648)


class ShareGroupDescribeRequest(Request, api_key=77, versions="0-1", flexible="0+"):
    group_ids: list[str] = Array("string")
    include_authorized_operations: bool = Bool()


class ShareGroupDescribeResponse(Response, api_key=77, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    groups: list[DescribedGroup] = Array(DescribedGroup)
