"""Alter client quotas: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Float64, Int16, Int32, Request, Response, String, Struct


class EntityData(Struct):
    entity_type: str = String()
    entity_name: str | None = String(nullable="0+")


class OpData(Struct):
    key: str = String()
    value: float = Float64()
    remove: bool = Bool()


class EntryData(Struct):
    entity: list[EntityData] = Array(EntityData)
    ops: list[OpData] = Array(OpData)


class EntryDataResult(Struct):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    entity: list[EntityData] = Array(EntityData)


class AlterClientQuotasRequest(Request, api_key=49, versions="0-1", flexible="1+"):
    entries: list[EntryData] = Array(EntryData)
    validate_only: bool = Bool()


class AlterClientQuotasResponse(Response, api_key=49, versions="0-1", flexible="1+"):
    throttle_time_ms: int = Int32()
    entries: list[EntryDataResult] = Array(EntryDataResult)
