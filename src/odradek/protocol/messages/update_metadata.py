"""Update metadata: wire schema.

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


class UpdateMetadataPartitionState(Struct):
    topic_name: str = String("0-4")
    partition_index: int = Int32("0-4")
    controller_epoch: int = Int32("0-4")
    leader: int = Int32("0-4")
    leader_epoch: int = Int32("0-4")
    isr: list[int] = Array("int32", "0-4")
    zk_version: int = Int32("0-4")
    replicas: list[int] = Array("int32", "0-4")
    offline_replicas: list[int] = Array("int32", "4")


class UpdateMetadataPartitionStateData(Struct):
    partition_index: int = Int32("5+")
    controller_epoch: int = Int32("5+")
    leader: int = Int32("5+")
    leader_epoch: int = Int32("5+")
    isr: list[int] = Array("int32", "5+")
    zk_version: int = Int32("5+")
    replicas: list[int] = Array("int32", "5+")
    offline_replicas: list[int] = Array("int32", "5+")


class UpdateMetadataTopicState(Struct):
    topic_name: str = String("5+")
    topic_id: UUID = Uuid("7+")
    partition_states: list[UpdateMetadataPartitionStateData] = Array(UpdateMetadataPartitionStateData, "5+")


class UpdateMetadataEndpoint(Struct):
    port: int = Int32("1+")
    host: str = String("1+")
    listener: str = String("3+")
    security_protocol: int = Int16("1+")


class UpdateMetadataBroker(Struct):
    id: int = Int32()
    v0_host: str = String("0")
    v0_port: int = Int32("0")
    endpoints: list[UpdateMetadataEndpoint] = Array(UpdateMetadataEndpoint, "1+")
    rack: str | None = String("2+", nullable="2+")


class UpdateMetadataRequest(Request, api_key=6, versions="0-8", flexible="6+"):
    controller_id: int = Int32()
    is_k_raft_controller: bool = Bool("8+", default=False)
    type: int = Int8("8+", tag=0, default=0)
    controller_epoch: int = Int32()
    broker_epoch: int = Int64("5+", default=-1)
    ungrouped_partition_states: list[UpdateMetadataPartitionState] = Array(
        UpdateMetadataPartitionState, "0-4"
    )
    topic_states: list[UpdateMetadataTopicState] = Array(UpdateMetadataTopicState, "5+")
    live_brokers: list[UpdateMetadataBroker] = Array(UpdateMetadataBroker)


class UpdateMetadataResponse(Response, api_key=6, versions="0-8", flexible="6+"):
    error_code: int = Int16()
