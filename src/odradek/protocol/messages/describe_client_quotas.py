"""Describe client quotas: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import (
    Array,
    Bool,
    Float64,
    Int8,
    Int16,
    Int32,
    Request,
    Response,
    String,
    Struct,
)


class ComponentData(Struct):
    entity_type: str = String()
    match_type: int = Int8()
    match: str | None = String(nullable="0+")


class EntityData(Struct):
    entity_type: str = String()
    entity_name: str | None = String(nullable="0+")


class ValueData(Struct):
    key: str = String()
    value: float = Float64()


class EntryData(Struct):
    entity: list[EntityData] = Array(EntityData)
    values: list[ValueData] = Array(ValueData)


class DescribeClientQuotasRequest(Request, api_key=48, versions="0-1", flexible="1+"):
    components: list[ComponentData] = Array(ComponentData)
    strict: bool = Bool()


class DescribeClientQuotasResponse(Response, api_key=48, versions="0-1", flexible="1+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    entries: list[EntryData] | None = Array(EntryData, nullable="0+")
