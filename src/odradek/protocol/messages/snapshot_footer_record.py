"""Snapshot footer record: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Message


class SnapshotFooterRecord(Message, versions="0", flexible="0+"):
    version: int = Int16()
