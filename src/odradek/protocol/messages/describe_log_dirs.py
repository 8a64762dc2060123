"""Describe log dirs: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int16, Int32, Int64, Request, Response, String, Struct


class DescribableLogDirTopic(Struct):
    topic: str = String()
    partitions: list[int] = Array("int32")


class DescribeLogDirsPartition(Struct):
    partition_index: int = Int32()
    partition_size: int = Int64()
    offset_lag: int = Int64()
    is_future_key: bool = Bool()


class DescribeLogDirsTopic(Struct):
    name: str = String()
    partitions: list[DescribeLogDirsPartition] = Array(DescribeLogDirsPartition)


class DescribeLogDirsResult(Struct):
    error_code: int = Int16()
    log_dir: str = String()
    topics: list[DescribeLogDirsTopic] = Array(DescribeLogDirsTopic)
    total_bytes: int = Int64("4+", default=-1)
    usable_bytes: int = Int64("4+", default=-1)
    is_cordoned: bool = Bool("5+", default=False)


class DescribeLogDirsRequest(Request, api_key=35, versions="0-5", flexible="2+"):
    topics: list[DescribableLogDirTopic] | None = Array(DescribableLogDirTopic, nullable="0+")


class DescribeLogDirsResponse(Response, api_key=35, versions="0-5", flexible="2+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16("3+")
    results: list[DescribeLogDirsResult] = Array(DescribeLogDirsResult)
