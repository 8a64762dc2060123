"""Metadata: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from uuid import UUID

from odradek.protocol.schema import Array, Bool, Int16, Int32, Request, Response, String, Struct, Uuid


class MetadataRequestTopic(Struct):
    topic_id: UUID = Uuid("10+")
    name: str | None = String(nullable="10+")


class MetadataResponseBroker(Struct):
    node_id: int = Int32()
    host: str = String()
    port: int = Int32()
    rack: str | None = String("1+", nullable="1+", default=None)


class MetadataResponsePartition(Struct):
    error_code: int = Int16()
    partition_index: int = Int32()
    leader_id: int = Int32()
    leader_epoch: int = Int32("7+", default=-1)
    replica_nodes: list[int] = Array("int32")
    isr_nodes: list[int] = Array("int32")
    offline_replicas: list[int] = Array("int32", "5+")


class MetadataResponseTopic(Struct):
    error_code: int = Int16()
    name: str | None = String(nullable="12+")
    topic_id: UUID = Uuid("10+")
    is_internal: bool = Bool("1+", default=False)
    partitions: list[MetadataResponsePartition] = Array(MetadataResponsePartition)
    topic_authorized_operations: int = Int32("8+", default=-2147483648)


class MetadataRequest(Request, api_key=3, versions="0-13", flexible="9+"):
    topics: list[MetadataRequestTopic] | None = Array(MetadataRequestTopic, nullable="1+")
    allow_auto_topic_creation: bool = Bool("4+", default=True)
    include_cluster_authorized_operations: bool = Bool("8-10")
    include_topic_authorized_operations: bool = Bool("8+")


class MetadataResponse(Response, api_key=3, versions="0-13", flexible="9+"):
    throttle_time_ms: int = Int32("3+")
    brokers: list[MetadataResponseBroker] = Array(MetadataResponseBroker)
    cluster_id: str | None = String("2+", nullable="2+", default=None)
    controller_id: int = Int32("1+", default=-1)
    topics: list[MetadataResponseTopic] = Array(MetadataResponseTopic)
    cluster_authorized_operations: int = Int32("8-10", default=-2147483648)
    error_code: int = Int16("13+")
