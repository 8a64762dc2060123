"""Add raft voter: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Request, Response, String, Struct, UInt16, Uuid


class Listener(Struct):
    name: str = String()
    host: str = String()
    port: int = UInt16()


class AddRaftVoterRequest(Request, api_key=80, versions="0-1", flexible="0+"):
    cluster_id: str | None = String(nullable="0+")
    timeout_ms: int = Int32()
    voter_id: int = Int32()
    voter_directory_id: UUID = Uuid()
    listeners: list[Listener] = Array(Listener)
    ack_when_committed: bool = Bool("1+", default=True)


class AddRaftVoterResponse(Response, api_key=80, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
