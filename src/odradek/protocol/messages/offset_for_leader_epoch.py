"""Offset for leader epoch: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct


class OffsetForLeaderPartition(Struct):
    partition: int = Int32()
    current_leader_epoch: int = Int32("2+", default=-1)
    leader_epoch: int = Int32()


class OffsetForLeaderTopic(Struct):
    topic: str = String()
    partitions: list[OffsetForLeaderPartition] = Array(OffsetForLeaderPartition)


class EpochEndOffset(Struct):
    error_code: int = Int16()
    partition: int = Int32()
    leader_epoch: int = Int32("1+", default=-1)
    end_offset: int = Int64(default=-1)


class OffsetForLeaderTopicResult(Struct):
    topic: str = String()
    partitions: list[EpochEndOffset] = Array(EpochEndOffset)


class OffsetForLeaderEpochRequest(Request, api_key=23, versions="0-4", flexible="4+"):
    replica_id: int = Int32("3+", default=-2)
    topics: list[OffsetForLeaderTopic] = Array(OffsetForLeaderTopic)


class OffsetForLeaderEpochResponse(Response, api_key=23, versions="0-4", flexible="4+"):
    throttle_time_ms: int = Int32("2+")
    topics: list[OffsetForLeaderTopicResult] = Array(OffsetForLeaderTopicResult)
