"""Add partitions to txn: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int16, Int32, Int64, Request, Response, String, Struct


class AddPartitionsToTxnTopic(Struct):
    name: str = String("4+")
    partitions: list[int] = Array("int32", "4+")


class AddPartitionsToTxnTransaction(Struct):
    transactional_id: str = String("4+")
    producer_id: int = Int64("4+")
    producer_epoch: int = Int16("4+")
    verify_only: bool = Bool("4+", default=False)
    topics: list[AddPartitionsToTxnTopic] = Array(AddPartitionsToTxnTopic, "4+")


class AddPartitionsToTxnTopicData(Struct):
    name: str = String("0-3")
    partitions: list[int] = Array("int32", "0-3")


class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = Int32("4+")
    partition_error_code: int = Int16("4+")


class AddPartitionsToTxnTopicResult(Struct):
    name: str = String("4+")
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = Array(
        AddPartitionsToTxnPartitionResult, "4+"
    )


class AddPartitionsToTxnResult(Struct):
    transactional_id: str = String("4+")
    topic_results: list[AddPartitionsToTxnTopicResult] = Array(AddPartitionsToTxnTopicResult, "4+")


class AddPartitionsToTxnPartitionResultResult(Struct):
    partition_index: int = Int32("0-3")
    partition_error_code: int = Int16("0-3")


class AddPartitionsToTxnTopicResultResult(Struct):
    name: str = String("0-3")
    results_by_partition: list[AddPartitionsToTxnPartitionResultResult] = Array(
        AddPartitionsToTxnPartitionResultResult, "0-3"
    )


class AddPartitionsToTxnRequest(Request, api_key=24, versions="0-5", flexible="3+"):
    transactions: list[AddPartitionsToTxnTransaction] = Array(AddPartitionsToTxnTransaction, "4+")
    v3_and_below_transactional_id: str = String("0-3")
    v3_and_below_producer_id: int = Int64("0-3")
    v3_and_below_producer_epoch: int = Int16("0-3")
    v3_and_below_topics: list[AddPartitionsToTxnTopicData] = Array(AddPartitionsToTxnTopicData, "0-3")


class AddPartitionsToTxnResponse(Response, api_key=24, versions="0-5", flexible="3+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16("4+")
    results_by_transaction: list[AddPartitionsToTxnResult] = Array(AddPartitionsToTxnResult, "4+")
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResultResult] = Array(
        AddPartitionsToTxnTopicResultResult, "0-3"
    )
