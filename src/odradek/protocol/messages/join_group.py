"""Join group: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Bytes, Int16, Int32, Request, Response, String, Struct


class JoinGroupRequestProtocol(Struct):
    name: str = String()
    metadata: bytes = Bytes()


class JoinGroupResponseMember(Struct):
    member_id: str = String()
    group_instance_id: str | None = String("5+", nullable="5+", default=None)
    metadata: bytes = Bytes()


class JoinGroupRequest(Request, api_key=11, versions="0-9", flexible="6+"):
    group_id: str = String()
    session_timeout_ms: int = Int32()
    rebalance_timeout_ms: int = Int32("1+", default=-1)
    member_id: str = String()
    group_instance_id: str | None = String("5+", nullable="5+", default=None)
    protocol_type: str = String()
    protocols: list[JoinGroupRequestProtocol] = Array(JoinGroupRequestProtocol)
    reason: str | None = String("8+", nullable="8+", default=None)


class JoinGroupResponse(Response, api_key=11, versions="0-9", flexible="6+"):
    throttle_time_ms: int = Int32("2+")
    error_code: int = Int16()
    generation_id: int = Int32(default=-1)
    protocol_type: str | None = String("7+", nullable="7+", default=None)
    protocol_name: str | None = String(nullable="7+")
    leader: str = String()
    skip_assignment: bool = Bool("9+", default=False)
    member_id: str = String()
    members: list[JoinGroupResponseMember] = Array(JoinGroupResponseMember)
