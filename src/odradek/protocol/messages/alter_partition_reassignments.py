"""Alter partition reassignments: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int16, Int32, Request, Response, String, Struct


class ReassignablePartition(Struct):
    partition_index: int = Int32()
    replicas: list[int] | None = Array("int32", nullable="0+", default=None)


class ReassignableTopic(Struct):
    name: str = String()
    partitions: list[ReassignablePartition] = Array(ReassignablePartition)


class ReassignablePartitionResponse(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")


class ReassignableTopicResponse(Struct):
    name: str = String()
    partitions: list[ReassignablePartitionResponse] = Array(ReassignablePartitionResponse)


class AlterPartitionReassignmentsRequest(Request, api_key=45, versions="0-1", flexible="0+"):
    timeout_ms: int = Int32(default=60000)
    allow_replication_factor_change: bool = Bool("1+", default=True)
    topics: list[ReassignableTopic] = Array(ReassignableTopic)


class AlterPartitionReassignmentsResponse(Response, api_key=45, versions="0-1", flexible="0+"):
    throttle_time_ms: int = Int32()
    allow_replication_factor_change: bool = Bool("1+", default=True)
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    responses: list[ReassignableTopicResponse] = Array(ReassignableTopicResponse)
