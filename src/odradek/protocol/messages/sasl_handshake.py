"""Sasl handshake: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Request, Response, String


class SaslHandshakeRequest(Request, api_key=17, versions="0-1"):
    mechanism: str = String()


class SaslHandshakeResponse(Response, api_key=17, versions="0-1"):
    error_code: int = Int16()
    mechanisms: list[str] = Array("string")
