"""Share acknowledge: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Bool,
    Int16,
    Int32,
    Int64,
    Nested,
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


class AcknowledgePartition(Struct):
    partition_index: int = Int32()
    acknowledgement_batches: list[AcknowledgementBatch] = Array(AcknowledgementBatch)


class AcknowledgeTopic(Struct):
    topic_id: UUID = Uuid()
    partitions: list[AcknowledgePartition] = Array(AcknowledgePartition)


class LeaderIdAndEpoch(Struct):
    leader_id: int = Int32()
    leader_epoch: int = Int32()


class PartitionData(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    current_leader: LeaderIdAndEpoch = Nested(LeaderIdAndEpoch)


class ShareAcknowledgeTopicResponse(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class NodeEndpoint(Struct):
    node_id: int = Int32()
    host: str = String()
    port: int = Int32()
    rack: str | None = String(nullable="0+", default=None)


class ShareAcknowledgeRequest(Request, api_key=79, versions="0-2", flexible="0+"):
    group_id: str | None = String(nullable="0+", default=None)
    member_id: str | None = String(nullable="0+")
    share_session_epoch: int = Int32()
    is_renew_ack: bool = Bool("2+", default=False)
    topics: list[AcknowledgeTopic] = Array(AcknowledgeTopic)


class ShareAcknowledgeResponse(Response, api_key=79, versions="0-2", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+", default=None)
    acquisition_lock_timeout_ms: int = Int32("2+")
    responses: list[ShareAcknowledgeTopicResponse] = Array(ShareAcknowledgeTopicResponse)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint)
