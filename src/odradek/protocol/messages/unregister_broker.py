"""Unregister broker: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Int32, Request, Response, String


class UnregisterBrokerRequest(Request, api_key=64, versions="0", flexible="0+"):
    broker_id: int = Int32()


class UnregisterBrokerResponse(Response, api_key=64, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
