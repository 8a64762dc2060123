"""Delete groups: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct


class DeletableGroupResult(Struct):
    group_id: str = String()
    error_code: int = Int16()
    error_message: str | None = String("3+", nullable="3+", default=None)


class DeleteGroupsRequest(Request, api_key=42, versions="0-3", flexible="2+"):
    groups_names: list[str] = Array("string")


class DeleteGroupsResponse(Response, api_key=42, versions="0-3", flexible="2+"):
    throttle_time_ms: int = Int32()
    results: list[DeletableGroupResult] = Array(DeletableGroupResult)
