"""Sync group: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bytes, Int16, Int32, Request, Response, String, Struct


class SyncGroupRequestAssignment(Struct):
    member_id: str = String()
    assignment: bytes = Bytes()


class SyncGroupRequest(Request, api_key=14, versions="0-5", flexible="4+"):
    group_id: str = String()
    generation_id: int = Int32()
    member_id: str = String()
    group_instance_id: str | None = String("3+", nullable="3+", default=None)
    protocol_type: str | None = String("5+", nullable="5+", default=None)
    protocol_name: str | None = String("5+", nullable="5+", default=None)
    assignments: list[SyncGroupRequestAssignment] = Array(SyncGroupRequestAssignment)


class SyncGroupResponse(Response, api_key=14, versions="0-5", flexible="4+"):
    throttle_time_ms: int = Int32("1+")
    error_code: int = Int16()
    protocol_type: str | None = String("5+", nullable="5+", default=None)
    protocol_name: str | None = String("5+", nullable="5+", default=None)
    assignment: bytes = Bytes()
