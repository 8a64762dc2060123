"""Find coordinator: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Request, Response, String, Struct


class Coordinator(Struct):
    key: str = String("4+")
    node_id: int = Int32("4+")
    host: str = String("4+")
    port: int = Int32("4+")
    error_code: int = Int16("4+")
    error_message: str | None = String("4+", nullable="4+")


class FindCoordinatorRequest(Request, api_key=10, versions="0-6", flexible="3+"):
    key: str = String("0-3")
    key_type: int = Int8("1+", default=0)
    coordinator_keys: list[str] = Array("string", "4+")


class FindCoordinatorResponse(Response, api_key=10, versions="0-6", flexible="3+"):
    throttle_time_ms: int = Int32("1+")
    error_code: int = Int16("0-3")
    error_message: str | None = String("1-3", nullable="1-3")
    node_id: int = Int32("0-3")
    host: str = String("0-3")
    port: int = Int32("0-3")
    coordinators: list[Coordinator] = Array(Coordinator, "4+")
