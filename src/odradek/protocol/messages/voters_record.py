"""Voters record: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Message, Nested, String, Struct, UInt16, Uuid


class Endpoint(Struct):
    name: str = String()
    host: str = String()
    port: int = UInt16()


class KRaftVersionFeature(Struct):
    min_supported_version: int = Int16()
    max_supported_version: int = Int16()


class Voter(Struct):
    voter_id: int = Int32()
    voter_directory_id: UUID = Uuid()
    endpoints: list[Endpoint] = Array(Endpoint)
    k_raft_version_feature: KRaftVersionFeature = Nested(KRaftVersionFeature)


class VotersRecord(Message, versions="0", flexible="0+"):
    version: int = Int16()
    voters: list[Voter] = Array(Voter)
