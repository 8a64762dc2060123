"""Read share group state: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int8, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class PartitionData(Struct):
    partition: int = Int32()
    leader_epoch: int = Int32()


class ReadStateData(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class StateBatch(Struct):
    first_offset: int = Int64()
    last_offset: int = Int64()
    delivery_state: int = Int8()
    delivery_count: int = Int16()


class PartitionResult(Struct):
    partition: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    state_epoch: int = Int32()
    start_offset: int = Int64()
    state_batches: list[StateBatch] = Array(StateBatch)


class ReadStateResult(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionResult] = Array(PartitionResult)


class ReadShareGroupStateRequest(Request, api_key=84, versions="0", flexible="0+"):
    group_id: str = String()
    topics: list[ReadStateData] = Array(ReadStateData)


class ReadShareGroupStateResponse(Response, api_key=84, versions="0", flexible="0+"):
    results: list[ReadStateResult] = Array(ReadStateResult)
