"""Read share group state summary: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class PartitionData(Struct):
    partition: int = Int32()
    leader_epoch: int = Int32()


class ReadStateSummaryData(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class PartitionResult(Struct):
    partition: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    state_epoch: int = Int32()
    leader_epoch: int = Int32()
    start_offset: int = Int64()
    delivery_complete_count: int = Int32("1+", default=-1)


class ReadStateSummaryResult(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionResult] = Array(PartitionResult)


class ReadShareGroupStateSummaryRequest(Request, api_key=87, versions="0-1", flexible="0+"):
    group_id: str = String()
    topics: list[ReadStateSummaryData] = Array(ReadStateSummaryData)


class ReadShareGroupStateSummaryResponse(Response, api_key=87, versions="0-1", flexible="0+"):
    results: list[ReadStateSummaryResult] = Array(ReadStateSummaryResult)
