"""Fetch: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
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


class ReplicaState(Struct):
    replica_id: int = Int32("15+", default=-1)
    replica_epoch: int = Int64("15+", default=-1)


class FetchPartition(Struct):
    partition: int = Int32()
    current_leader_epoch: int = Int32("9+", default=-1)
    fetch_offset: int = Int64()
    last_fetched_epoch: int = Int32("12+", default=-1)
    log_start_offset: int = Int64("5+", default=-1)
    partition_max_bytes: int = Int32()
    replica_directory_id: UUID = Uuid("17+", tag=0)
    high_watermark: int = Int64("18+", tag=1, default=9223372036854775807)


class FetchTopic(Struct):
    topic: str = String("0-12")
    topic_id: UUID = Uuid("13+")
    partitions: list[FetchPartition] = Array(FetchPartition)


class ForgottenTopic(Struct):
    topic: str = String("7-12")
    topic_id: UUID = Uuid("13+")
    partitions: list[int] = Array("int32", "7+")


class EpochEndOffset(Struct):
    epoch: int = Int32("12+", default=-1)
    end_offset: int = Int64("12+", default=-1)


class LeaderIdAndEpoch(Struct):
    leader_id: int = Int32("12+", default=-1)
    leader_epoch: int = Int32("12+", default=-1)


class SnapshotId(Struct):
    end_offset: int = Int64("12+", default=-1)
    epoch: int = Int32("12+", default=-1)


class AbortedTransaction(Struct):
    producer_id: int = Int64("4+")
    first_offset: int = Int64("4+")


class PartitionData(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    high_watermark: int = Int64()
    last_stable_offset: int = Int64("4+", default=-1)
    log_start_offset: int = Int64("5+", default=-1)
    diverging_epoch: EpochEndOffset = Nested(EpochEndOffset, "12+", tag=0)
    current_leader: LeaderIdAndEpoch = Nested(LeaderIdAndEpoch, "12+", tag=1)
    snapshot_id: SnapshotId = Nested(SnapshotId, "12+", tag=2)
    aborted_transactions: list[AbortedTransaction] | None = Array(AbortedTransaction, "4+", nullable="4+")
    preferred_read_replica: int = Int32("11+", default=-1)
    records: bytes | None = Records(nullable="0+")


class FetchableTopicResponse(Struct):
    topic: str = String("0-12")
    topic_id: UUID = Uuid("13+")
    partitions: list[PartitionData] = Array(PartitionData)


class NodeEndpoint(Struct):
    node_id: int = Int32("16+")
    host: str = String("16+")
    port: int = Int32("16+")
    rack: str | None = String("16+", nullable="16+", default=None)


class FetchRequest(Request, api_key=1, versions="0-18", flexible="12+"):
    cluster_id: str | None = String("12+", nullable="12+", tag=0, default=None)
    replica_id: int = Int32("0-14", default=-1)
    replica_state: ReplicaState = Nested(ReplicaState, "15+", tag=1)
    max_wait_ms: int = Int32()
    min_bytes: int = Int32()
    max_bytes: int = Int32("3+", default=2147483647)
    isolation_level: int = Int8("4+", default=0)
    session_id: int = Int32("7+", default=0)
    session_epoch: int = Int32("7+", default=-1)
    topics: list[FetchTopic] = Array(FetchTopic)
    forgotten_topics_data: list[ForgottenTopic] = Array(ForgottenTopic, "7+")
    rack_id: str = String("11+", default="")


class FetchResponse(Response, api_key=1, versions="0-18", flexible="12+"):
    throttle_time_ms: int = Int32("1+")
    error_code: int = Int16("7+")
    session_id: int = Int32("7+", default=0)
    responses: list[FetchableTopicResponse] = Array(FetchableTopicResponse)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint, "16+", tag=0)
