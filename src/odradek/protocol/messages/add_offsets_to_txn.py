"""Add offsets to txn: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Int16, Int32, Int64, Request, Response, String


class AddOffsetsToTxnRequest(Request, api_key=25, versions="0-4", flexible="3+"):
    transactional_id: str = String()
    producer_id: int = Int64()
    producer_epoch: int = Int16()
    group_id: str = String()


class AddOffsetsToTxnResponse(Response, api_key=25, versions="0-4", flexible="3+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
