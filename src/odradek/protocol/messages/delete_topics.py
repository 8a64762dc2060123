"""Delete topics: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct, Uuid


class DeleteTopicState(Struct):
    name: str | None = String("6+", nullable="6+", default=None)
    topic_id: UUID = Uuid("6+")


class DeletableTopicResult(Struct):
    name: str | None = String(nullable="6+")
    topic_id: UUID = Uuid("6+")
    error_code: int = Int16()
    error_message: str | None = String("5+", nullable="5+", default=None)


class DeleteTopicsRequest(Request, api_key=20, versions="0-6", flexible="4+"):
    topics: list[DeleteTopicState] = Array(DeleteTopicState, "6+")
    topic_names: list[str] = Array("string", "0-5")
    timeout_ms: int = Int32()


class DeleteTopicsResponse(Response, api_key=20, versions="0-6", flexible="4+"):
    throttle_time_ms: int = Int32("1+")
    responses: list[DeletableTopicResult] = Array(DeletableTopicResult)
