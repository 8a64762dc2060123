"""Delete share group offsets: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct, Uuid


class DeleteShareGroupOffsetsRequestTopic(Struct):
    topic_name: str = String()


class DeleteShareGroupOffsetsResponseTopic(Struct):
    topic_name: str = String()
    topic_id: UUID = Uuid()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)


class DeleteShareGroupOffsetsRequest(Request, api_key=92, versions="0", flexible="0+"):
    group_id: str = String()
    topics: list[DeleteShareGroupOffsetsRequestTopic] = Array(DeleteShareGroupOffsetsRequestTopic)


class DeleteShareGroupOffsetsResponse(Response, api_key=92, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    responses: list[DeleteShareGroupOffsetsResponseTopic] = Array(DeleteShareGroupOffsetsResponseTopic)
