"""Alter partition: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Int8, Int16, Int32, Int64, Request, Response, String, Struct, Uuid


class BrokerState(Struct):
    broker_id: int = Int32("3+")
    broker_epoch: int = Int64("3+", default=-1)


class PartitionData(Struct):
    partition_index: int = Int32()
    leader_epoch: int = Int32()
    new_isr: list[int] = Array("int32", "0-2")
    new_isr_with_epochs: list[BrokerState] = Array(BrokerState, "3+")
    leader_recovery_state: int = Int8("1+", default=0)
    partition_epoch: int = Int32()


class TopicData(Struct):
    topic_name: str = String("0-1")
    topic_id: UUID = Uuid("2+")
    partitions: list[PartitionData] = Array(PartitionData)


class PartitionDataResult(Struct):
    partition_index: int = Int32()
    error_code: int = Int16()
    leader_id: int = Int32()
    leader_epoch: int = Int32()
    isr: list[int] = Array("int32")
    leader_recovery_state: int = Int8("1+", default=0)
    partition_epoch: int = Int32()


class TopicDataResult(Struct):
    topic_name: str = String("0-1")
    topic_id: UUID = Uuid("2+")
    partitions: list[PartitionDataResult] = Array(PartitionDataResult)


class AlterPartitionRequest(Request, api_key=56, versions="0-3", flexible="0+"):
    broker_id: int = Int32()
    broker_epoch: int = Int64(default=-1)
    topics: list[TopicData] = Array(TopicData)


class AlterPartitionResponse(Response, api_key=56, versions="0-3", flexible="0+"):
    throttle_time_ms: int = Int32()
    error_code: int = Int16()
    topics: list[TopicDataResult] = Array(TopicDataResult)
