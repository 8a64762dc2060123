"""Describe producers: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct


class TopicRequest(Struct):
    name: str = String()
    partition_indexes: list[int] = Array("int32")


class ProducerState(Struct):
    producer_id: int = Int64()
    producer_epoch: int = Int32()
    last_sequence: int = Int32(default=-1)
    last_timestamp: int = Int64(default=-1)
    coordinator_epoch: int = Int32()
    current_txn_start_offset: int = Int64(default=-1)


class PartitionResponse(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    active_producers: list[ProducerState] = Array(ProducerState)


class TopicResponse(Struct):
    name: str = String()
    partitions: list[PartitionResponse] = Array(PartitionResponse)


class DescribeProducersRequest(Request, api_key=61, versions="0", flexible="0+"):
    topics: list[TopicRequest] = Array(TopicRequest)


class DescribeProducersResponse(Response, api_key=61, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    topics: list[TopicResponse] = Array(TopicResponse)
