"""Renew delegation token: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bytes, Int16, Int32, Int64, Request, Response


class RenewDelegationTokenRequest(Request, api_key=39, versions="0-2", flexible="2+"):
    hmac: bytes = Bytes()
    renew_period_ms: int = Int64()


class RenewDelegationTokenResponse(Response, api_key=39, versions="0-2", flexible="2+"):
    error_code: int = Int16()
    expiry_timestamp_ms: int = Int64()
    throttle_time_ms: int = Int32()
