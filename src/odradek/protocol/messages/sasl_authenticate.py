"""Sasl authenticate: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bytes, Int16, Int64, Request, Response, String


class SaslAuthenticateRequest(Request, api_key=36, versions="0-2", flexible="2+"):
    auth_bytes: bytes = Bytes()


class SaslAuthenticateResponse(Response, api_key=36, versions="0-2", flexible="2+"):
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    auth_bytes: bytes = Bytes()
    session_lifetime_ms: int = Int64("1+", default=0)
