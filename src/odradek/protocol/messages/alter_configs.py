"""Alter configs: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int8, Int16, Int32, Request, Response, String, Struct


class AlterableConfig(Struct):
    name: str = String()
    value: str | None = String(nullable="0+")


class AlterConfigsResource(Struct):
    resource_type: int = Int8()
    resource_name: str = String()
    configs: list[AlterableConfig] = Array(AlterableConfig)


class AlterConfigsResourceResponse(Struct):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    resource_type: int = Int8()
    resource_name: str = String()


class AlterConfigsRequest(Request, api_key=33, versions="0-2", flexible="2+"):
    resources: list[AlterConfigsResource] = Array(AlterConfigsResource)
    validate_only: bool = Bool()


class AlterConfigsResponse(Response, api_key=33, versions="0-2", flexible="2+"):
    throttle_time_ms: int = Int32()
    responses: list[AlterConfigsResourceResponse] = Array(AlterConfigsResourceResponse)
