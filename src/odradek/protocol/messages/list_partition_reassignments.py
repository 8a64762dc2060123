"""List partition reassignments: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct


class ListPartitionReassignmentsTopics(Struct):
    name: str = String()
    partition_indexes: list[int] = Array("int32")


class OngoingPartitionReassignment(Struct):
    partition_index: int = Int32()
    replicas: list[int] = Array("int32")
    adding_replicas: list[int] = Array("int32")
    removing_replicas: list[int] = Array("int32")


class OngoingTopicReassignment(Struct):
    name: str = String()
    partitions: list[OngoingPartitionReassignment] = Array(OngoingPartitionReassignment)


class ListPartitionReassignmentsRequest(Request, api_key=46, versions="0", flexible="0+"):
    timeout_ms: int = Int32(default=60000)
    topics: list[ListPartitionReassignmentsTopics] | None = Array(
        ListPartitionReassignmentsTopics, nullable="0+", default=None
    )


class ListPartitionReassignmentsResponse(Response, api_key=46, versions="0", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    error_message: str | None = String(nullable="0+")
    topics: list[OngoingTopicReassignment] = Array(OngoingTopicReassignment)
