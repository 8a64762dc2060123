"""Leave group: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct


class MemberIdentity(Struct):
    member_id: str = String("3+")
    group_instance_id: str | None = String("3+", nullable="3+", default=None)
    reason: str | None = String("5+", nullable="5+", default=None)


class MemberResponse(Struct):
    member_id: str = String("3+")
    group_instance_id: str | None = String("3+", nullable="3+")
    error_code: int = Int16("3+")


class LeaveGroupRequest(Request, api_key=13, versions="0-5", flexible="4+"):
    group_id: str = String()
    member_id: str = String("0-2")
    members: list[MemberIdentity] = Array(MemberIdentity, "3+")


class LeaveGroupResponse(Response, api_key=13, versions="0-5", flexible="4+"):
    throttle_time_ms: int = Int32("1+")
    error_code: int = Int16()
    members: list[MemberResponse] = Array(MemberResponse, "3+")
