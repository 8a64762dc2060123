"""Describe groups: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Bytes, Int16, Int32, Request, Response, String, Struct


class DescribedGroupMember(Struct):
    member_id: str = String()
    group_instance_id: str | None = String("4+", nullable="4+", default=None)
    client_id: str = String()
    client_host: str = String()
    member_metadata: bytes = Bytes()
    member_assignment: bytes = Bytes()


class DescribedGroup(Struct):
    error_code: int = Int16()
    error_message: str | None = String("6+", nullable="6+", default=None)
    group_id: str = String()
    group_state: str = String()
    protocol_type: str = String()
    protocol_data: str = String()
    members: list[DescribedGroupMember] = Array(DescribedGroupMember)
    authorized_operations: int = Int32("3+", default=-2147483648)


class DescribeGroupsRequest(Request, api_key=15, versions="0-6", flexible="5+"):
    groups: list[str] = Array("string")
    include_authorized_operations: bool = Bool("3+")


class DescribeGroupsResponse(Response, api_key=15, versions="0-6", flexible="5+"):
    throttle_time_ms: int = Int32("1+")
    groups: list[DescribedGroup] = Array(DescribedGroup)
