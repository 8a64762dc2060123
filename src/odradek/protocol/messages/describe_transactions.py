"""Describe transactions: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct


class TopicData(Struct):
    topic: str = String()
    partitions: list[int] = Array("int32")


class TransactionState(Struct):
    error_code: int = Int16()
    transactional_id: str = String()
    transaction_state: str = String()
    transaction_timeout_ms: int = Int32()
    transaction_start_time_ms: int = Int64()
    producer_id: int = Int64()
    producer_epoch: int = Int16()
    topics: list[TopicData] = Array(TopicData)


class DescribeTransactionsRequest(Request, api_key=65, versions="0", flexible="0+"):
    transactional_ids: list[str] = Array("string")


class DescribeTransactionsResponse(Response, api_key=65, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    transaction_states: list[TransactionState] = Array(TransactionState)
