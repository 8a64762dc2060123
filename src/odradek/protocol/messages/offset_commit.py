"""Offset commit: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class OffsetCommitRequestPartition(Struct):
    partition_index: int = Int32()
    committed_offset: int = Int64()
    committed_leader_epoch: int = Int32("6+", default=-1)
    commit_timestamp: int = Int64("1", default=-1)
    committed_metadata: str | None = String(nullable="0+")


class OffsetCommitRequestTopic(Struct):
    name: str = String("0-9")
    topic_id: UUID = Uuid("10+")
    partitions: list[OffsetCommitRequestPartition] = Array(OffsetCommitRequestPartition)


class OffsetCommitResponsePartition(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()


class OffsetCommitResponseTopic(Struct):
    name: str = String("0-9")
    topic_id: UUID = Uuid("10+")
    partitions: list[OffsetCommitResponsePartition] = Array(OffsetCommitResponsePartition)


class OffsetCommitRequest(Request, api_key=8, versions="0-10", flexible="8+"):
    group_id: str = String()
    generation_id_or_member_epoch: int = Int32("1+", default=-1)
    member_id: str = String("1+")
    group_instance_id: str | None = String("7+", nullable="7+", default=None)
    retention_time_ms: int = Int64("2-4", default=-1)
    topics: list[OffsetCommitRequestTopic] = Array(OffsetCommitRequestTopic)


class OffsetCommitResponse(Response, api_key=8, versions="0-10", flexible="8+"):
    throttle_time_ms: int = Int32("3+")
    topics: list[OffsetCommitResponseTopic] = Array(OffsetCommitResponseTopic)
