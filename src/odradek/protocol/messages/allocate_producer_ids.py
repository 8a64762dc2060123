"""Allocate producer ids: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Int32, Int64, Request, Response


class AllocateProducerIdsRequest(Request, api_key=67, versions="0", flexible="0+"):
    broker_id: int = Int32()
    broker_epoch: int = Int64(default=-1)


class AllocateProducerIdsResponse(Response, api_key=67, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    producer_id_start: int = Int64()
    producer_id_len: int = Int32()
