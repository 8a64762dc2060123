"""Leader and isr: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import (
    Array,
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Request,
    Response,
    String,
    Struct,
    Uuid,
)


class LeaderAndIsrPartitionState(Struct):
    topic_name: str = String("0-1")
    partition_index: int = Int32("0-1")
    controller_epoch: int = Int32("0-1")
    leader: int = Int32("0-1")
    leader_epoch: int = Int32("0-1")
    isr: list[int] = Array("int32", "0-1")
    partition_epoch: int = Int32("0-1")
    replicas: list[int] = Array("int32", "0-1")
    is_new: bool = Bool("1", default=False)


class LeaderAndIsrPartitionStateData(Struct):
    partition_index: int = Int32("2+")
    controller_epoch: int = Int32("2+")
    leader: int = Int32("2+")
    leader_epoch: int = Int32("2+")
    isr: list[int] = Array("int32", "2+")
    partition_epoch: int = Int32("2+")
    replicas: list[int] = Array("int32", "2+")
    adding_replicas: list[int] = Array("int32", "3+")
    removing_replicas: list[int] = Array("int32", "3+")
    is_new: bool = Bool("2+", default=False)
    leader_recovery_state: int = Int8("6+", default=0)


class LeaderAndIsrTopicState(Struct):
    topic_name: str = String("2+")
    topic_id: UUID = Uuid("5+")
    partition_states: list[LeaderAndIsrPartitionStateData] = Array(LeaderAndIsrPartitionStateData, "2+")


class LeaderAndIsrLiveLeader(Struct):
    broker_id: int = Int32()
    host_name: str = String()
    port: int = Int32()


class LeaderAndIsrPartitionError(Struct):
    topic_name: str = String("0-4")
    partition_index: int = Int32("0-4")
    error_code: int = Int16("0-4")


class LeaderAndIsrPartitionErrorResult(Struct):
    partition_index: int = Int32("5+")
    error_code: int = Int16("5+")


class LeaderAndIsrTopicError(Struct):
    topic_id: UUID = Uuid("5+")
    partition_errors: list[LeaderAndIsrPartitionErrorResult] = Array(LeaderAndIsrPartitionErrorResult, "5+")


class LeaderAndIsrRequest(Request, api_key=4, versions="0-7", flexible="4+"):
    controller_id: int = Int32()
    is_k_raft_controller: bool = Bool("7+", default=False)
    controller_epoch: int = Int32()
    broker_epoch: int = Int64("2+", default=-1)
    type: int = Int8("5+")
    ungrouped_partition_states: list[LeaderAndIsrPartitionState] = Array(LeaderAndIsrPartitionState, "0-1")
    topic_states: list[LeaderAndIsrTopicState] = Array(LeaderAndIsrTopicState, "2+")
    live_leaders: list[LeaderAndIsrLiveLeader] = Array(LeaderAndIsrLiveLeader)


class LeaderAndIsrResponse(Response, api_key=4, versions="0-7", flexible="4+"):
    error_code: int = Int16()
    partition_errors: list[LeaderAndIsrPartitionError] = Array(LeaderAndIsrPartitionError, "0-4")
    topics: list[LeaderAndIsrTopicError] = Array(LeaderAndIsrTopicError, "5+")
