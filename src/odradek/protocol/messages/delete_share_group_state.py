"""Delete share group state: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct, Uuid


class PartitionData(Struct):
    partition: int = Int32()


class DeleteStateData(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class PartitionResult(Struct):
    partition: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class DeleteStateResult(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionResult] = Array(PartitionResult)


class DeleteShareGroupStateRequest(Request, api_key=86, versions="0", flexible="0+"):
    group_id: str = String()
    topics: list[DeleteStateData] = Array(DeleteStateData)


class DeleteShareGroupStateResponse(Response, api_key=86, versions="0", flexible="0+"):
    results: list[DeleteStateResult] = Array(DeleteStateResult)
