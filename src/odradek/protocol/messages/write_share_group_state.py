"""Write share group state: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int8, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class StateBatch(Struct):
    first_offset: int = Int64()
    last_offset: int = Int64()
    delivery_state: int = Int8()
    delivery_count: int = Int16()


class PartitionData(Struct):
    partition: int = Int32()
    state_epoch: int = Int32()
    leader_epoch: int = Int32()
    start_offset: int = Int64()
    delivery_complete_count: int = Int32("1+", default=-1)
    state_batches: list[StateBatch] = Array(StateBatch)


class WriteStateData(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class PartitionResult(Struct):
    partition: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class WriteStateResult(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionResult] = Array(PartitionResult)


class WriteShareGroupStateRequest(Request, api_key=85, versions="0-1", flexible="0+"):
    group_id: str = String()
    topics: list[WriteStateData] = Array(WriteStateData)


class WriteShareGroupStateResponse(Response, api_key=85, versions="0-1", flexible="0+"):
    results: list[WriteStateResult] = Array(WriteStateResult)
