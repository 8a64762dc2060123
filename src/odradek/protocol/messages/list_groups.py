"""List groups: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct


class ListedGroup(Struct):
    group_id: str = String()
    protocol_type: str = String()
    group_state: str = String("4+")
    group_type: str = String("5+")


class ListGroupsRequest(Request, api_key=16, versions="0-5", flexible="3+"):
    states_filter: list[str] = Array("string", "4+")
    types_filter: list[str] = Array("string", "5+")


class ListGroupsResponse(Response, api_key=16, versions="0-5", flexible="3+"):
    throttle_time_ms: int = Int32("1+")
    error_code: int = Int16()
    groups: list[ListedGroup] = Array(ListedGroup)
