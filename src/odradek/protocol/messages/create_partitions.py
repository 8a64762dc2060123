"""Create partitions: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int16, Int32, Request, Response, String, Struct


class CreatePartitionsAssignment(Struct):
    broker_ids: list[int] = Array("int32")


class CreatePartitionsTopic(Struct):
    name: str = String()
    count: int = Int32()
    assignments: list[CreatePartitionsAssignment] | None = Array(CreatePartitionsAssignment, nullable="0+")


class CreatePartitionsTopicResult(Struct):
    name: str = String()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class CreatePartitionsRequest(Request, api_key=37, versions="0-3", flexible="2+"):
    topics: list[CreatePartitionsTopic] = Array(CreatePartitionsTopic)
    timeout_ms: int = Int32()
    validate_only: bool = Bool()


class CreatePartitionsResponse(Response, api_key=37, versions="0-3", flexible="2+"):
    throttle_time_ms: int = Int32()
    results: list[CreatePartitionsTopicResult] = Array(CreatePartitionsTopicResult)
