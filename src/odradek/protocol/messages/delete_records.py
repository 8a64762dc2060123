"""Delete records: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct


class DeleteRecordsPartition(Struct):
    partition_index: int = Int32()
    offset: int = Int64()


class DeleteRecordsTopic(Struct):
    name: str = String()
    partitions: list[DeleteRecordsPartition] = Array(DeleteRecordsPartition)


class DeleteRecordsPartitionResult(Struct):
    partition_index: int = Int32()
    low_watermark: int = Int64()
    error_code: int = Int16()


class DeleteRecordsTopicResult(Struct):
    name: str = String()
    partitions: list[DeleteRecordsPartitionResult] = Array(DeleteRecordsPartitionResult)


class DeleteRecordsRequest(Request, api_key=21, versions="0-2", flexible="2+"):
    topics: list[DeleteRecordsTopic] = Array(DeleteRecordsTopic)
    timeout_ms: int = Int32()


class DeleteRecordsResponse(Response, api_key=21, versions="0-2", flexible="2+"):
    throttle_time_ms: int = Int32()
    topics: list[DeleteRecordsTopicResult] = Array(DeleteRecordsTopicResult)
