"""Write txn markers: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int8, Int16, Int32, Int64, Request, Response, String, Struct


class WritableTxnMarkerTopic(Struct):
    name: str = String()
    partition_indexes: list[int] = Array("int32")


class WritableTxnMarker(Struct):
    producer_id: int = Int64()
    producer_epoch: int = Int16()
    transaction_result: bool = Bool()
    topics: list[WritableTxnMarkerTopic] = Array(WritableTxnMarkerTopic)
    coordinator_epoch: int = Int32()
    transaction_version: int = Int8("2+", default=0)


class WritableTxnMarkerPartitionResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()


class WritableTxnMarkerTopicResult(Struct):
    name: str = String()
    partitions: list[WritableTxnMarkerPartitionResult] = Array(WritableTxnMarkerPartitionResult)


class WritableTxnMarkerResult(Struct):
    producer_id: int = Int64()
    topics: list[WritableTxnMarkerTopicResult] = Array(WritableTxnMarkerTopicResult)


class WriteTxnMarkersRequest(Request, api_key=27, versions="0-2", flexible="1+"):
    markers: list[WritableTxnMarker] = Array(WritableTxnMarker)


class WriteTxnMarkersResponse(Response, api_key=27, versions="0-2", flexible="1+"):
    markers: list[WritableTxnMarkerResult] = Array(WritableTxnMarkerResult)
