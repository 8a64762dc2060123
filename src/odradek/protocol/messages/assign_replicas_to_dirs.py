"""Assign replicas to dirs: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, Struct, Uuid


class PartitionData(Struct):
    partition_index: int = Int32()


class TopicData(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionData] = Array(PartitionData)


class DirectoryData(Struct):
    id: UUID = Uuid()
    topics: list[TopicData] = Array(TopicData)


class PartitionDataResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()


class TopicDataResult(Struct):
    topic_id: UUID = Uuid()
    partitions: list[PartitionDataResult] = Array(PartitionDataResult)


class DirectoryDataResult(Struct):
    id: UUID = Uuid()
    topics: list[TopicDataResult] = Array(TopicDataResult)


class AssignReplicasToDirsRequest(Request, api_key=73, versions="0", flexible="0+"):
    broker_id: int = Int32()
    broker_epoch: int = Int64(default=-1)
    directories: list[DirectoryData] = Array(DirectoryData)


class AssignReplicasToDirsResponse(Response, api_key=73, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    directories: list[DirectoryDataResult] = Array(DirectoryDataResult)
