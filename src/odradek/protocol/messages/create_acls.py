"""Create acls: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Request, Response, String, Struct


class AclCreation(Struct):
    resource_type: int = Int8()
    resource_name: str = String()
    resource_pattern_type: int = Int8("1+", default=3)
    principal: str = String()
    host: str = String()
    operation: int = Int8()
    permission_type: int = Int8()


class AclCreationResult(Struct):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")


class CreateAclsRequest(Request, api_key=30, versions="0-3", flexible="2+"):
    creations: list[AclCreation] = Array(AclCreation)


class CreateAclsResponse(Response, api_key=30, versions="0-3", flexible="2+"):
    throttle_time_ms: int = Int32()
    results: list[AclCreationResult] = Array(AclCreationResult)
