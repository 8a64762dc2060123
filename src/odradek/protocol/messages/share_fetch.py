"""Share fetch: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Bool,
    Int8,
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


class AcknowledgementBatch(Struct):
    first_offset: int = Int64()
    last_offset: int = Int64()
    acknowledge_types: list[int] = Array("int8")


class FetchPartition(Struct):
    partition_index: int = Int32()
    partition_max_bytes: int = Int32("0")
    acknowledgement_batches: list[AcknowledgementBatch] = Array(AcknowledgementBatch)


class FetchTopic(Struct):
    topic_id: UUID = Uuid()
    partitions: list[FetchPartition] = Array(FetchPartition)


class ForgottenTopic(Struct):
    topic_id: UUID = Uuid()
    partitions: list[int] = Array("int32")


class LeaderIdAndEpoch(Struct):
    leader_id: int = Int32()
    leader_epoch: int = Int32()


class AcquiredRecords(Struct):
    first_offset: int = Int64()
    last_offset: int = Int64()
    delivery_count: int = Int16()


class PartitionData(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    acknowledge_error_code: int = Int16()
    acknowledge_error_message: str | None = String(nullable="0+", default=None)
    current_leader: LeaderIdAndEpoch = Nested(LeaderIdAndEpoch)
    records: bytes | None = Records(nullable="0")
    acquired_records: list[AcquiredRecords] = Array(AcquiredRecords)


class ShareFetchableTopicResponse(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class NodeEndpoint(Struct):
    node_id: int = Int32()
    host: str = String()
    port: int = Int32()
    rack: str | None = String(nullable="0+", default=None)


class ShareFetchRequest(Request, api_key=78, versions="0-2", flexible="0+"):
    group_id: str | None = String(nullable="0+", default=None)
    member_id: str | None = String(nullable="0+")
    share_session_epoch: int = Int32()
    max_wait_ms: int = Int32()
    min_bytes: int = Int32()
    max_bytes: int = Int32(default=2147483647)
    max_records: int = Int32("1+")
    batch_size: int = Int32("1+")
    share_acquire_mode: int = Int8("2+", default=0)
    is_renew_ack: bool = Bool("2+", default=False)
    topics: list[FetchTopic] = Array(FetchTopic)
    forgotten_topics_data: list[ForgottenTopic] = Array(ForgottenTopic)


class ShareFetchResponse(Response, api_key=78, versions="0-2", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    acquisition_lock_timeout_ms: int = Int32("1+")
    responses: list[ShareFetchableTopicResponse] = Array(ShareFetchableTopicResponse)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint)
