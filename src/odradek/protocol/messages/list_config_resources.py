"""List config resources: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Request, Response, String, Struct


class ConfigResource(Struct):
    resource_name: str = String()
    resource_type: int = Int8("1+", default=16)


class ListConfigResourcesRequest(Request, api_key=74, versions="0-1", flexible="0+"):
    resource_types: list[int] = Array("int8", "1+")


class ListConfigResourcesResponse(Response, api_key=74, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    config_resources: list[ConfigResource] = Array(ConfigResource)
