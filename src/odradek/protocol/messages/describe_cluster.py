"""Describe cluster: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int8, Int16, Int32, Request, Response, String, Struct


class DescribeClusterBroker(Struct):
    broker_id: int = Int32()
    host: str = String()
    port: int = Int32()
    rack: str | None = String(nullable="0+", default=None)
    is_fenced: bool = Bool("2+")


class DescribeClusterRequest(Request, api_key=60, versions="0-2", flexible="0+"):
    include_cluster_authorized_operations: bool = Bool()
    endpoint_type: int = Int8("1+", default=1)
    include_fenced_brokers: bool = Bool("2+")


class DescribeClusterResponse(Response, api_key=60, versions="0-2", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    endpoint_type: int = Int8("1+", default=1)
    cluster_id: str = String()
    controller_id: int = Int32(default=-1)
    brokers: list[DescribeClusterBroker] = Array(DescribeClusterBroker)
    cluster_authorized_operations: int = Int32(default=-2147483648)
