"""Begin quorum epoch: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct, UInt16, Uuid


class PartitionData(Struct):
    partition_index: int = Int32()
    voter_directory_id: UUID = Uuid("1+")
    leader_id: int = Int32()
    leader_epoch: int = Int32()


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


class BeginQuorumEpochRequest(Request, api_key=53, versions="0-1", flexible="1+"):
    cluster_id: str | None = String(nullable="0+", default=None)
    voter_id: int = Int32("1+", default=-1)
    topics: list[TopicData] = Array(TopicData)
    leader_endpoints: list[LeaderEndpoint] = Array(LeaderEndpoint, "1+")


class BeginQuorumEpochResponse(Response, api_key=53, versions="0-1", flexible="1+"):
    error_code: int = Int16()
    topics: list[TopicDataResult] = Array(TopicDataResult)
    node_endpoints: list[NodeEndpoint] = Array(NodeEndpoint, "1+", tag=0)
