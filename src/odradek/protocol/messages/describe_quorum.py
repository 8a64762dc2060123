"""Describe quorum: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Int16,
    Int32,
    Int64,
    Request,
    Response,
    String,
    Struct,
    UInt16,
    Uuid,
)


class PartitionData(Struct):
    partition_index: int = Int32()


class TopicData(Struct):
    topic_name: str = String()
    partitions: list[PartitionData] = Array(PartitionData)


class ReplicaState(Struct):
    replica_id: int = Int32()
    replica_directory_id: UUID = Uuid("2+")
    log_end_offset: int = Int64()
    last_fetch_timestamp: int = Int64("1+", default=-1)
    last_caught_up_timestamp: int = Int64("1+", default=-1)


class PartitionDataResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String("2+", nullable="2+")
    leader_id: int = Int32()
    leader_epoch: int = Int32()
    high_watermark: int = Int64()
    current_voters: list[ReplicaState] = Array(ReplicaState)
    observers: list[ReplicaState] = Array(ReplicaState)


class TopicDataResult(Struct):
    topic_name: str = String()
    partitions: list[PartitionDataResult] = Array(PartitionDataResult)


class Listener(Struct):
    name: str = String("2+")
    host: str = String("2+")
    port: int = UInt16("2+")


class Node(Struct):
    node_id: int = Int32("2+")
    listeners: list[Listener] = Array(Listener, "2+")


class DescribeQuorumRequest(Request, api_key=55, versions="0-2", flexible="0+"):
    topics: list[TopicData] = Array(TopicData)


class DescribeQuorumResponse(Response, api_key=55, versions="0-2", flexible="0+"):
    error_code: int = Int16()
    error_message: str | None = String("2+", nullable="2+")
    topics: list[TopicDataResult] = Array(TopicDataResult)
    nodes: list[Node] = Array(Node, "2+")
