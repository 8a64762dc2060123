"""Get telemetry subscriptions: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Request, Response, Uuid


class GetTelemetrySubscriptionsRequest(Request, api_key=71, versions="0", flexible="0+"):
    client_instance_id: UUID = Uuid()


class GetTelemetrySubscriptionsResponse(Response, api_key=71, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    client_instance_id: UUID = Uuid()
    subscription_id: int = Int32()
    accepted_compression_types: list[int] = Array("int8")
    push_interval_ms: int = Int32()
    telemetry_max_bytes: int = Int32()
    delta_temporality: bool = Bool()
    requested_metrics: list[str] = Array("string")
