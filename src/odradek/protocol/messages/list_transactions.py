"""List transactions: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct


class TransactionState(Struct):
    transactional_id: str = String()
    producer_id: int = Int64()
    transaction_state: str = String()


class ListTransactionsRequest(Request, api_key=66, versions="0-2", flexible="0+"):
    state_filters: list[str] = Array("string")
    producer_id_filters: list[int] = Array("int64")
    duration_filter: int = Int64("1+", default=-1)
    transactional_id_pattern: str | None = String("2+", nullable="2+", default=None)


class ListTransactionsResponse(Response, api_key=66, versions="0-2", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    unknown_state_filters: list[str] = Array("string")
    transaction_states: list[TransactionState] = Array(TransactionState)
