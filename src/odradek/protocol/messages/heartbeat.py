"""Heartbeat: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Int32, Request, Response, String


class HeartbeatRequest(Request, api_key=12, versions="0-4", flexible="4+"):
    group_id: str = String()
    generation_id: int = Int32()
    member_id: str = String()
    group_instance_id: str | None = String("3+", nullable="3+", default=None)


class HeartbeatResponse(Response, api_key=12, versions="0-4", flexible="4+"):
    throttle_time_ms: int = Int32("1+")
    error_code: int = Int16()
