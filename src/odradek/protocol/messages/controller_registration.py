"""Controller registration: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Request, Response, String, Struct, UInt16, Uuid


class Listener(Struct):
    name: str = String()
    host: str = String()
    port: int = UInt16()
    security_protocol: int = Int16()


class Feature(Struct):
    name: str = String()
    min_supported_version: int = Int16()
    max_supported_version: int = Int16()


class ControllerRegistrationRequest(Request, api_key=70, versions="0", flexible="0+"):
    controller_id: int = Int32()
    incarnation_id: UUID = Uuid()
    zk_migration_ready: bool = Bool()
    listeners: list[Listener] = Array(Listener)
    features: list[Feature] = Array(Feature)


class ControllerRegistrationResponse(Response, api_key=70, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
