"""Offset delete: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct


class OffsetDeleteRequestPartition(Struct):
    partition_index: int = Int32()


class OffsetDeleteRequestTopic(Struct):
    name: str = String()
    partitions: list[OffsetDeleteRequestPartition] = Array(OffsetDeleteRequestPartition)


class OffsetDeleteResponsePartition(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()


class OffsetDeleteResponseTopic(Struct):
    name: str = String()
    partitions: list[OffsetDeleteResponsePartition] = Array(OffsetDeleteResponsePartition)


class OffsetDeleteRequest(Request, api_key=47, versions="0"):
    group_id: str = String()
    topics: list[OffsetDeleteRequestTopic] = Array(OffsetDeleteRequestTopic)


class OffsetDeleteResponse(Response, api_key=47, versions="0"):
    error_code: int = Int16()
    throttle_time_ms: int = Int32()
    topics: list[OffsetDeleteResponseTopic] = Array(OffsetDeleteResponseTopic)
