"""Initialize share group state: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class PartitionData(Struct):
    partition: int = Int32()
    state_epoch: int = Int32()
    start_offset: int = Int64()


class InitializeStateData(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class PartitionResult(Struct):
    partition: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class InitializeStateResult(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionResult] = Array(PartitionResult)


class InitializeShareGroupStateRequest(Request, api_key=83, versions="0", flexible="0+"):
    group_id: str = String()
    topics: list[InitializeStateData] = Array(InitializeStateData)


class InitializeShareGroupStateResponse(Response, api_key=83, versions="0", flexible="0+"):
    results: list[InitializeStateResult] = Array(InitializeStateResult)
