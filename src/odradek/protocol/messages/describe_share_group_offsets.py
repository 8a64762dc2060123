"""Describe share group offsets: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class DescribeShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = String()
    partitions: list[int] = Array("int32")


class DescribeShareGroupOffsetsRequestGroup(Struct):
    group_id: str = String()
    topics: list[DescribeShareGroupOffsetsRequestTopic] | None = Array(
        DescribeShareGroupOffsetsRequestTopic, nullable="0+"
    )


class DescribeShareGroupOffsetsResponsePartition(Struct):
    partition_index: int = Int32()
    start_offset: int = Int64()
    leader_epoch: int = Int32()
    lag: int = Int64("1+", default=-1)
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class DescribeShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = String()
    topic_id: UUID = Uuid()
    partitions: list[DescribeShareGroupOffsetsResponsePartition] = Array(
        DescribeShareGroupOffsetsResponsePartition
    )


class DescribeShareGroupOffsetsResponseGroup(Struct):
    group_id: str = String()
    topics: list[DescribeShareGroupOffsetsResponseTopic] = Array(DescribeShareGroupOffsetsResponseTopic)
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class DescribeShareGroupOffsetsRequest(Request, api_key=90, versions="0-1", flexible="0+"):
    groups: list[DescribeShareGroupOffsetsRequestGroup] = Array(DescribeShareGroupOffsetsRequestGroup)


class DescribeShareGroupOffsetsResponse(Response, api_key=90, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    groups: list[DescribeShareGroupOffsetsResponseGroup] = Array(DescribeShareGroupOffsetsResponseGroup)
