"""Request header: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Header, Int16, Int32, String


class RequestHeader(Header, versions="0-2", flexible="2+"):
    request_api_key: int = Int16()
    request_api_version: int = Int16()
    correlation_id: int = Int32()
    client_id: str | None = String("1+", nullable="1+", flexible="none")
