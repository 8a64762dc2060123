"""Elect leaders: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int8, Int16, Int32, Request, Response, String, Struct


class TopicPartitions(Struct):
    topic: str = String()
    partitions: list[int] = Array("int32")


class PartitionResult(Struct):
    partition_id: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")


class ReplicaElectionResult(Struct):
    topic: str = String()
    partition_result: list[PartitionResult] = Array(PartitionResult)


class ElectLeadersRequest(Request, api_key=43, versions="0-2", flexible="2+"):
    election_type: int = Int8("1+")
    topic_partitions: list[TopicPartitions] | None = Array(TopicPartitions, nullable="0+")
    timeout_ms: int = Int32(default=60000)


class ElectLeadersResponse(Response, api_key=43, versions="0-2", flexible="2+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16("1+")
    replica_election_results: list[ReplicaElectionResult] = Array(ReplicaElectionResult)
