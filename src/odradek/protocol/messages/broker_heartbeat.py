"""Broker heartbeat: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Int64, Request, Response


class BrokerHeartbeatRequest(Request, api_key=63, versions="0-2", flexible="0+"):
    broker_id: int = Int32()
    broker_epoch: int = Int64(default=-1)
    current_metadata_offset: int = Int64()
    want_fence: bool = Bool()
    want_shut_down: bool = Bool()
    offline_log_dirs: list[UUID] = Array("uuid", "1+", tag=0)
    cordoned_log_dirs: list[UUID] | None = Array("uuid", "2+", nullable="2+", tag=1, default=None)


class BrokerHeartbeatResponse(Response, api_key=63, versions="0-2", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    is_caught_up: bool = Bool(default=False)
    is_fenced: bool = Bool(default=True)
    should_shut_down: bool = Bool()
