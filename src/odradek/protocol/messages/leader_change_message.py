"""Leader change message: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Message, Struct, Uuid


class Voter(Struct):
    voter_id: int = Int32()
    voter_directory_id: UUID = Uuid("1+")


class LeaderChangeMessage(Message, versions="0-1", flexible="0+"):
    version: int = Int16()
    leader_id: int = Int32()
    voters: list[Voter] = Array(Voter)
    granting_voters: list[Voter] = Array(Voter)
