"""Init producer id: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bool, Int16, Int32, Int64, Request, Response, String


class InitProducerIdRequest(Request, api_key=22, versions="0-6", flexible="2+", unstable="6"):
    transactional_id: str | None = String(nullable="0+")
    transaction_timeout_ms: int = Int32()
    producer_id: int = Int64("3+", default=-1)
    producer_epoch: int = Int16("3+", default=-1)
    enable2_pc: bool = Bool("6+", default=False)
    keep_prepared_txn: bool = Bool("6+", default=False)


class InitProducerIdResponse(Response, api_key=22, versions="0-6", flexible="2+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    producer_id: int = Int64(default=-1)
    producer_epoch: int = Int16()
    ongoing_txn_producer_id: int = Int64("6+", default=-1)
    ongoing_txn_producer_epoch: int = Int16("6+", default=-1)
