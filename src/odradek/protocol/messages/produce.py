"""Produce: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Int16,
    Int32,
    Int64,
    Nested,
    Records,
    Request,
    Response,
    String,
    Struct,
    Uuid,
)


class PartitionProduceData(Struct):
    index: int = Int32()
    records: bytes | None = Records(nullable="0+")


class TopicProduceData(Struct):
    name: str = String("0-12")
    topic_id: UUID = Uuid("13+")
    partition_data: list[PartitionProduceData] = Array(PartitionProduceData)


class BatchIndexAndErrorMessage(Struct):
    batch_index: int = Int32("8+")
    batch_index_error_message: str | None = String("8+", nullable="8+", default=None)


class LeaderIdAndEpoch(Struct):
    leader_id: int = Int32("10+", default=-1)
    leader_epoch: int = Int32("10+", default=-1)


class PartitionProduceResponse(Struct):
    index: int = Int32()
    error_code: int = Int16()
    base_offset: int = Int64()
    log_append_time_ms: int = Int64("2+", default=-1)
    log_start_offset: int = Int64("5+", default=-1)
    record_errors: list[BatchIndexAndErrorMessage] = Array(BatchIndexAndErrorMessage, "8+")
    error_message: str | None = String("8+", nullable="8+", default=None)
    current_leader: LeaderIdAndEpoch = Nested(LeaderIdAndEpoch, "10+", tag=0)


class TopicProduceResponse(Struct):
    name: str = String("0-12")
    topic_id: UUID = Uuid("13+")
    partition_responses: list[PartitionProduceResponse] = Array(PartitionProduceResponse)


class NodeEndpoint(Struct):
    node_id: int = Int32("10+")
    host: str = String("10+")
    port: int = Int32("10+")
    rack: str | None = String("10+", nullable="10+", default=None)


class ProduceRequest(Request, api_key=0, versions="0-13", flexible="9+"):
    transactional_id: str | None = String("3+", nullable="3+", default=None)
    acks: int = Int16()
    timeout_ms: int = Int32()
    topic_data: list[TopicProduceData] = Array(TopicProduceData)


class ProduceResponse(Response, api_key=0, versions="0-13", flexible="9+"):
    responses: list[TopicProduceResponse] = Array(TopicProduceResponse)
    throttle_time_ms: int = Int32("1+", default=0)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint, "10+", tag=0)
