"""End txn marker: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int32, Message


class EndTxnMarker(Message, versions="0"):
    coordinator_epoch: int = Int32()
