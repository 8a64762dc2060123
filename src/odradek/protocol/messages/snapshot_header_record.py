"""Snapshot header record: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Int64, Message


class SnapshotHeaderRecord(Message, versions="0", flexible="0+"):
    version: int = Int16()
    last_contained_log_timestamp: int = Int64()
