"""Stop replica: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Array, Bool, Int16, Int32, Int64, Request, Response, String, Struct


class StopReplicaPartitionV0(Struct):
    topic_name: str = String("0")
    partition_index: int = Int32("0")


class StopReplicaTopicV1(Struct):
    name: str = String("1-2")
    partition_indexes: list[int] = Array("int32", "1-2")


class StopReplicaPartitionState(Struct):
    partition_index: int = Int32("3+")
    leader_epoch: int = Int32("3+", default=-1)
    delete_partition: bool = Bool("3+")


class StopReplicaTopicState(Struct):
    topic_name: str = String("3+")
    partition_states: list[StopReplicaPartitionState] = Array(StopReplicaPartitionState, "3+")


class StopReplicaPartitionError(Struct):
    topic_name: str = String()
    partition_index: int = Int32()
    error_code: int = Int16()


class StopReplicaRequest(Request, api_key=5, versions="0-4", flexible="2+"):
    controller_id: int = Int32()
    is_k_raft_controller: bool = Bool("4+", default=False)
    controller_epoch: int = Int32()
    broker_epoch: int = Int64("1+", default=-1)
    delete_partitions: bool = Bool("0-2")
    ungrouped_partitions: list[StopReplicaPartitionV0] = Array(StopReplicaPartitionV0, "0")
    topics: list[StopReplicaTopicV1] = Array(StopReplicaTopicV1, "1-2")
    topic_states: list[StopReplicaTopicState] = Array(StopReplicaTopicState, "3+")


class StopReplicaResponse(Response, api_key=5, versions="0-4", flexible="2+"):
    error_code: int = Int16()
    partition_errors: list[StopReplicaPartitionError] = Array(StopReplicaPartitionError)
