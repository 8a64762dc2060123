"""Alter share group offsets: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class AlterShareGroupOffsetsRequestPartition(Struct):
    partition_index: int = Int32()
    start_offset: int = Int64()


class AlterShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = String()
    partitions: list[AlterShareGroupOffsetsRequestPartition] = Array(AlterShareGroupOffsetsRequestPartition)


class AlterShareGroupOffsetsResponsePartition(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class AlterShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = String()
    topic_id: UUID = Uuid()
    partitions: list[AlterShareGroupOffsetsResponsePartition] = Array(AlterShareGroupOffsetsResponsePartition)


class AlterShareGroupOffsetsRequest(Request, api_key=91, versions="0", flexible="0+"):
    group_id: str = String()
    topics: list[AlterShareGroupOffsetsRequestTopic] = Array(AlterShareGroupOffsetsRequestTopic)


class AlterShareGroupOffsetsResponse(Response, api_key=91, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    responses: list[AlterShareGroupOffsetsResponseTopic] = Array(AlterShareGroupOffsetsResponseTopic)
