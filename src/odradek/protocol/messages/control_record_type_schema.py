"""Control record type schema: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Message


class ControlRecordTypeSchema(Message, versions="0"):
    type: int = Int16()
