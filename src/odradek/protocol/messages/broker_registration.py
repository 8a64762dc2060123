"""Broker registration: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Bool,
    Int16,
    Int32,
    Int64,
    Request,
    Response,
    String,
    Struct,
    UInt16,
    Uuid,
)


class Listener(Struct):
    name: str = String()
    host: str = String()
    port: int = UInt16()
    security_protocol: int = Int16()


class Feature(Struct):
    name: str = String()
    min_supported_version: int = Int16()
    max_supported_version: int = Int16()


class BrokerRegistrationRequest(Request, api_key=62, versions="0-4", flexible="0+"):
    broker_id: int = Int32()
    cluster_id: str = String()
    incarnation_id: UUID = Uuid()
    listeners: list[Listener] = Array(Listener)
    features: list[Feature] = Array(Feature)
    rack: str | None = String(nullable="0+")
    is_migrating_zk_broker: bool = Bool("1+", default=False)
    log_dirs: list[UUID] = Array("uuid", "2+")
    previous_broker_epoch: int = Int64("3+", default=-1)


class BrokerRegistrationResponse(Response, api_key=62, versions="0-4", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    broker_epoch: int = Int64(default=-1)
