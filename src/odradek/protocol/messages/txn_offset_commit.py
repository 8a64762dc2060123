"""Txn offset commit: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = Int32()
    committed_offset: int = Int64()
    committed_leader_epoch: int = Int32("2+", default=-1)
    committed_metadata: str | None = String(nullable="0+")


class TxnOffsetCommitRequestTopic(Struct):
    name: str = String("0-5")
    topic_id: UUID = Uuid("6+")
    partitions: list[TxnOffsetCommitRequestPartition] = Array(TxnOffsetCommitRequestPartition)


class TxnOffsetCommitResponsePartition(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()


class TxnOffsetCommitResponseTopic(Struct):
    name: str = String("0-5")
    topic_id: UUID = Uuid("6+")
    partitions: list[TxnOffsetCommitResponsePartition] = Array(TxnOffsetCommitResponsePartition)


class TxnOffsetCommitRequest(Request, api_key=28, versions="0-6", flexible="3+"):
    transactional_id: str = String()
    group_id: str = String()
    producer_id: int = Int64()
    producer_epoch: int = Int16()
    generation_id_or_member_epoch: int = Int32("3+", default=-1)
    member_id: str = String("3+", default="")
    group_instance_id: str | None = String("3+", nullable="3+", default=None)
    topics: list[TxnOffsetCommitRequestTopic] = Array(TxnOffsetCommitRequestTopic)


class TxnOffsetCommitResponse(Response, api_key=28, versions="0-6", flexible="3+"):
    throttle_time_ms: int = Int32()
    topics: list[TxnOffsetCommitResponseTopic] = Array(TxnOffsetCommitResponseTopic)
