"""Push telemetry: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Bool, Bytes, Int8, Int16, Int32, Request, Response, Uuid


class PushTelemetryRequest(Request, api_key=72, versions="0", flexible="0+"):
    client_instance_id: UUID = Uuid()
    subscription_id: int = Int32()
    terminating: bool = Bool()
    compression_type: int = Int8()
    metrics: bytes = Bytes()


class PushTelemetryResponse(Response, api_key=72, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
