"""Alter replica log dirs: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Int16, Int32, Request, Response, String, Struct


class AlterReplicaLogDirTopic(Struct):
    name: str = String()
    partitions: list[int] = Array("int32")


class AlterReplicaLogDir(Struct):
    path: str = String()
    topics: list[AlterReplicaLogDirTopic] = Array(AlterReplicaLogDirTopic)


class AlterReplicaLogDirPartitionResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()


class AlterReplicaLogDirTopicResult(Struct):
    topic_name: str = String()
    partitions: list[AlterReplicaLogDirPartitionResult] = Array(AlterReplicaLogDirPartitionResult)


class AlterReplicaLogDirsRequest(Request, api_key=34, versions="0-2", flexible="2+"):
    dirs: list[AlterReplicaLogDir] = Array(AlterReplicaLogDir)


class AlterReplicaLogDirsResponse(Response, api_key=34, versions="0-2", flexible="2+"):
    throttle_time_ms: int = Int32()
    results: list[AlterReplicaLogDirTopicResult] = Array(AlterReplicaLogDirTopicResult)
