"""K raft version record: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Message


class KRaftVersionRecord(Message, versions="0", flexible="0+"):
    version: int = Int16()
    k_raft_version: int = Int16()
