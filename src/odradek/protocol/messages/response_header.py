"""Response header: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Header, Int32


class ResponseHeader(Header, versions="0-1", flexible="1+"):
    correlation_id: int = Int32()
