"""Describe acls: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Request, Response, String, Struct


class AclDescription(Struct):
    principal: str = String()
    host: str = String()
    operation: int = Int8()
    permission_type: int = Int8()


class DescribeAclsResource(Struct):
    resource_type: int = Int8()
    resource_name: str = String()
    pattern_type: int = Int8("1+", default=3)
    acls: list[AclDescription] = Array(AclDescription)


class DescribeAclsRequest(Request, api_key=29, versions="0-3", flexible="2+"):
    resource_type_filter: int = Int8()
    resource_name_filter: str | None = String(nullable="0+")
    pattern_type_filter: int = Int8("1+", default=3)
    principal_filter: str | None = String(nullable="0+")
    host_filter: str | None = String(nullable="0+")
    operation: int = Int8()
    permission_type: int = Int8()


class DescribeAclsResponse(Response, api_key=29, versions="0-3", flexible="2+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    resources: list[DescribeAclsResource] = Array(DescribeAclsResource)
