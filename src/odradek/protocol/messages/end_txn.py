"""End txn: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bool, Int16, Int32, Int64, Request, Response, String


class EndTxnRequest(Request, api_key=26, versions="0-5", flexible="3+"):
    transactional_id: str = String()
    producer_id: int = Int64()
    producer_epoch: int = Int16()
    committed: bool = Bool()


class EndTxnResponse(Response, api_key=26, versions="0-5", flexible="3+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    producer_id: int = Int64("5+", default=-1)
    producer_epoch: int = Int16("5+", default=-1)
