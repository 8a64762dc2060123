"""Vote: wire schema.

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
    Request,
    Response,
    String,
    Struct,
    UInt16,
    Uuid,
)


class PartitionData(Struct):
    partition_index: int = Int32()
    replica_epoch: int = Int32()
    replica_id: int = Int32()
    replica_directory_id: UUID = Uuid("1+")
    voter_directory_id: UUID = Uuid("1+")
    last_offset_epoch: int = Int32()
    last_offset: int = Int64()
    pre_vote: bool = Bool("2+")


class TopicData(Struct):
    topic_name: str = String()
    partitions: list[PartitionData] = Array(PartitionData)


class PartitionDataResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    leader_id: int = Int32()
    leader_epoch: int = Int32()
    vote_granted: bool = Bool()


class TopicDataResult(Struct):
    topic_name: str = String()
    partitions: list[PartitionDataResult] = Array(PartitionDataResult)


class NodeEndpoint(Struct):
    node_id: int = Int32("1+")
    host: str = String("1+")
    port: int = UInt16("1+")


class VoteRequest(Request, api_key=52, versions="0-2", flexible="0+"):
    cluster_id: str | None = String(nullable="0+", default=None)
    voter_id: int = Int32("1+", default=-1)
    topics: list[TopicData] = Array(TopicData)


class VoteResponse(Response, api_key=52, versions="0-2", flexible="0+"):
    error_code: int = Int16()
    topics: list[TopicDataResult] = Array(TopicDataResult)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint, "1+", tag=0)
