"""Fetch snapshot: wire schema.

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
    UInt16,
    Uuid,
)


class SnapshotId(Struct):
    end_offset: int = Int64()
    epoch: int = Int32()


class PartitionSnapshot(Struct):
    partition: int = Int32()
    current_leader_epoch: int = Int32()
    snapshot_id: SnapshotId = Nested(SnapshotId)
    position: int = Int64()
    replica_directory_id: UUID = Uuid("1+", tag=0)


class TopicSnapshot(Struct):
    name: str = String()
    partitions: list[PartitionSnapshot] = Array(PartitionSnapshot)


class LeaderIdAndEpoch(Struct):
    leader_id: int = Int32()
    leader_epoch: int = Int32()


class PartitionSnapshotResult(Struct):
    index: int = Int32()
    error_code: int = Int16()
    snapshot_id: SnapshotId = Nested(SnapshotId)
    current_leader: LeaderIdAndEpoch = Nested(LeaderIdAndEpoch, tag=0)
    size: int = Int64()
    position: int = Int64()
    unaligned_records: bytes = Records()


class TopicSnapshotResult(Struct):
    name: str = String()
    partitions: list[PartitionSnapshotResult] = Array(PartitionSnapshotResult)


class NodeEndpoint(Struct):
    node_id: int = Int32("1+")
    host: str = String("1+")
    port: int = UInt16("1+")


class FetchSnapshotRequest(Request, api_key=59, versions="0-1", flexible="0+"):
    cluster_id: str | None = String(nullable="0+", tag=0, default=None)
    replica_id: int = Int32(default=-1)
    max_bytes: int = Int32(default=2147483647)
    topics: list[TopicSnapshot] = Array(TopicSnapshot)


class FetchSnapshotResponse(Response, api_key=59, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    topics: list[TopicSnapshotResult] = Array(TopicSnapshotResult)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint, "1+", tag=0)
