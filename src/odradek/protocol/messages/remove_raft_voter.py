"""Remove raft voter: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Int16, Int32, Request, Response, String, Uuid


class RemoveRaftVoterRequest(Request, api_key=81, versions="0", flexible="0+"):
    cluster_id: str | None = String(nullable="0+")
    voter_id: int = Int32()
    voter_directory_id: UUID = Uuid()


class RemoveRaftVoterResponse(Response, api_key=81, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
