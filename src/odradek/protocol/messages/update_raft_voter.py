"""Update raft voter: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Int16,
    Int32,
    Nested,
    Request,
    Response,
    String,
    Struct,
    UInt16,
    Uuid,
)


class Listener(Struct):
    name: str = String()
    host: str = String()
    port: int = UInt16()


class KRaftVersionFeature(Struct):
    min_supported_version: int = Int16()
    max_supported_version: int = Int16()


class CurrentLeader(Struct):
    leader_id: int = Int32(default=-1)
    leader_epoch: int = Int32(default=-1)
    host: str = String()
    port: int = Int32()


class UpdateRaftVoterRequest(Request, api_key=82, versions="0", flexible="0+"):
    cluster_id: str | None = String(nullable="0+")
    current_leader_epoch: int = Int32()
    voter_id: int = Int32()
    voter_directory_id: UUID = Uuid()
    listeners: list[Listener] = Array(Listener)
    k_raft_version_feature: KRaftVersionFeature = Nested(KRaftVersionFeature)


class UpdateRaftVoterResponse(Response, api_key=82, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    current_leader: CurrentLeader = Nested(CurrentLeader, tag=0)
