"""Envelope: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bytes, Int16, Request, Response


class EnvelopeRequest(Request, api_key=58, versions="0", flexible="0+"):
    request_data: bytes = Bytes()
    request_principal: bytes | None = Bytes(nullable="0+")
    client_host_address: bytes = Bytes()


class EnvelopeResponse(Response, api_key=58, versions="0", flexible="0+"):
    response_data: bytes | None = Bytes(nullable="0+", default=None)
    error_code: int = Int16()
