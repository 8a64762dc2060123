"""List offsets: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Int64, Request, Response, String, Struct


class ListOffsetsPartition(Struct):
    partition_index: int = Int32()
    current_leader_epoch: int = Int32("4+", default=-1)
    timestamp: int = Int64()
    max_num_offsets: int = Int32("0", default=1)


class ListOffsetsTopic(Struct):
    name: str = String()
    partitions: list[ListOffsetsPartition] = Array(ListOffsetsPartition)


class ListOffsetsPartitionResponse(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    old_style_offsets: list[int] = Array("int64", "0")
    timestamp: int = Int64("1+", default=-1)
    offset: int = Int64("1+", default=-1)
    leader_epoch: int = Int32("4+", default=-1)


class ListOffsetsTopicResponse(Struct):
    name: str = String()
    partitions: list[ListOffsetsPartitionResponse] = Array(ListOffsetsPartitionResponse)


class ListOffsetsRequest(Request, api_key=2, versions="0-11", flexible="6+"):
    replica_id: int = Int32()
    isolation_level: int = Int8("2+")
    topics: list[ListOffsetsTopic] = Array(ListOffsetsTopic)
    timeout_ms: int = Int32("10+")


class ListOffsetsResponse(Response, api_key=2, versions="0-11", flexible="6+"):
    throttle_time_ms: int = Int32("2+")
    topics: list[ListOffsetsTopicResponse] = Array(ListOffsetsTopicResponse)
