"""Expire delegation token: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bytes, Int16, Int32, Int64, Request, Response


class ExpireDelegationTokenRequest(Request, api_key=40, versions="0-2", flexible="2+"):
    hmac: bytes = Bytes()
    expiry_time_period_ms: int = Int64()


class ExpireDelegationTokenResponse(Response, api_key=40, versions="0-2", flexible="2+"):
    error_code: int = Int16()
    expiry_timestamp_ms: int = Int64()
    throttle_time_ms: int = Int32()
