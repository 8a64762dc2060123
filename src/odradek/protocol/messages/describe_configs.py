"""Describe configs: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int8, Int16, Int32, Request, Response, String, Struct


class DescribeConfigsResource(Struct):
    resource_type: int = Int8()
    resource_name: str = String()
    configuration_keys: list[str] | None = Array("string", nullable="0+")


class DescribeConfigsSynonym(Struct):
    name: str = String("1+")
    value: str | None = String("1+", nullable="1+")
    source: int = Int8("1+")


class DescribeConfigsResourceResult(Struct):
    name: str = String()
    value: str | None = String(nullable="0+")
    read_only: bool = Bool()
    is_default: bool = Bool("0")
    config_source: int = Int8("1+", default=-1)
    is_sensitive: bool = Bool()
    synonyms: list[DescribeConfigsSynonym] = Array(DescribeConfigsSynonym, "1+")
    config_type: int = Int8("3+", default=0)
    documentation: str | None = String("3+", nullable="3+")


class DescribeConfigsResult(Struct):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    resource_type: int = Int8()
    resource_name: str = String()
    configs: list[DescribeConfigsResourceResult] = Array(DescribeConfigsResourceResult)


class DescribeConfigsRequest(Request, api_key=32, versions="0-4", flexible="4+"):
    resources: list[DescribeConfigsResource] = Array(DescribeConfigsResource)
    include_synonyms: bool = Bool("1+", default=False)
    include_documentation: bool = Bool("3+", default=False)


class DescribeConfigsResponse(Response, api_key=32, versions="0-4", flexible="4+"):
    throttle_time_ms: int = Int32()
    results: list[DescribeConfigsResult] = Array(DescribeConfigsResult)
