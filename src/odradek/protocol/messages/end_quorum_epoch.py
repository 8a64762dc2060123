"""End quorum epoch: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct, UInt16, Uuid


class ReplicaInfo(Struct):
    candidate_id: int = Int32("1+")
    candidate_directory_id: UUID = Uuid("1+")


class PartitionData(Struct):
    partition_index: int = Int32()
    leader_id: int = Int32()
    leader_epoch: int = Int32()
    preferred_successors: list[int] = Array("int32", "0")
    preferred_candidates: list[ReplicaInfo] = Array(ReplicaInfo, "1+")


class TopicData(Struct):
    topic_name: str = String()
    partitions: list[PartitionData] = Array(PartitionData)


class LeaderEndpoint(Struct):
    name: str = String("1+")
    host: str = String("1+")
    port: int = UInt16("1+")


class PartitionDataResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    leader_id: int = Int32()
    leader_epoch: int = Int32()


class TopicDataResult(Struct):
    topic_name: str = String()
    partitions: list[PartitionDataResult] = Array(PartitionDataResult)


class NodeEndpoint(Struct):
    node_id: int = Int32("1+")
    host: str = String("1+")
    port: int = UInt16("1+")


class EndQuorumEpochRequest(Request, api_key=54, versions="0-1", flexible="1+"):
    cluster_id: str | None = String(nullable="0+", default=None)
    topics: list[TopicData] = Array(TopicData)
    leader_endpoints: list[LeaderEndpoint] = Array(LeaderEndpoint, "1+")


class EndQuorumEpochResponse(Response, api_key=54, versions="0-1", flexible="1+"):
    error_code: int = Int16()
    topics: list[TopicDataResult] = Array(TopicDataResult)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint, "1+", tag=0)
