"""Offset fetch: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class OffsetFetchRequestTopic(Struct):
    name: str = String("0-7")
    partition_indexes: list[int] = Array("int32", "0-7")


class OffsetFetchRequestTopics(Struct):
    name: str = String("8-9")
    topic_id: UUID = Uuid("10+")
    partition_indexes: list[int] = Array("int32", "8+")


class OffsetFetchRequestGroup(Struct):
    group_id: str = String("8+")
    member_id: str | None = String("9+", nullable="9+", default=None)
    member_epoch: int = Int32("9+", default=-1)
    topics: list[OffsetFetchRequestTopics] | None = Array(OffsetFetchRequestTopics, "8+", nullable="8+")


class OffsetFetchResponsePartition(Struct):
    partition_index: int = Int32("0-7")
    committed_offset: int = Int64("0-7")
    committed_leader_epoch: int = Int32("5-7", default=-1)
    metadata: str | None = String("0-7", nullable="0-7")
    error_code: int = Int16("0-7")


class OffsetFetchResponseTopic(Struct):
    name: str = String("0-7")
    partitions: list[OffsetFetchResponsePartition] = Array(OffsetFetchResponsePartition, "0-7")


class OffsetFetchResponsePartitions(Struct):
    partition_index: int = Int32("8+")
    committed_offset: int = Int64("8+")
    committed_leader_epoch: int = Int32("8+", default=-1)
    metadata: str | None = String("8+", nullable="8+")
    error_code: int = Int16("8+")


class OffsetFetchResponseTopics(Struct):
    name: str = String("8-9")
    topic_id: UUID = Uuid("10+")
    partitions: list[OffsetFetchResponsePartitions] = Array(OffsetFetchResponsePartitions, "8+")


class OffsetFetchResponseGroup(Struct):
    group_id: str = String("8+")
    topics: list[OffsetFetchResponseTopics] = Array(OffsetFetchResponseTopics, "8+")
    error_code: int = Int16("8+", default=0)


class OffsetFetchRequest(Request, api_key=9, versions="0-10", flexible="6+"):
    group_id: str = String("0-7")
    topics: list[OffsetFetchRequestTopic] | None = Array(OffsetFetchRequestTopic, "0-7", nullable="2-7")
    groups: list[OffsetFetchRequestGroup] = Array(OffsetFetchRequestGroup, "8+")
    require_stable: bool = Bool("7+", default=False)


class OffsetFetchResponse(Response, api_key=9, versions="0-10", flexible="6+"):
    throttle_time_ms: int = Int32("3+")
    topics: list[OffsetFetchResponseTopic] = Array(OffsetFetchResponseTopic, "0-7")
    error_code: int = Int16("2-7", default=0)
    groups: list[OffsetFetchResponseGroup] = Array(OffsetFetchResponseGroup, "8+")
