"""The controller's side of the broker protocol, for in-process tests: LeaderAndIsr, UpdateMetadata and
StopReplica requests built as a Kafka 3.9 ZooKeeper controller sends them (newest versions' shapes; the
codec drops what an older version lacks when a test sends at that version)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from odradek.protocol.messages.leader_and_isr import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrPartitionStateData,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from odradek.protocol.messages.stop_replica import (
    StopReplicaPartitionState,
    StopReplicaPartitionV0,
    StopReplicaRequest,
    StopReplicaTopicState,
    StopReplicaTopicV1,
)
from odradek.protocol.messages.update_metadata import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataPartitionStateData,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)

CONTROLLER_ID = 1
CONTROLLER_EPOCH = 5
BROKER_EPOCH = 100
PLAINTEXT = 0


@dataclass
class Partition:
    """One partition's state in a test's cluster picture."""

    topic: str
    index: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int] | None = None
    offline: list[int] = field(default_factory=list)
    partition_epoch: int = 0

    @property
    def in_sync(self) -> list[int]:
        return self.isr if self.isr is not None else list(self.replicas)


def leader_and_isr(
    partitions: list[Partition],
    topic_ids: dict[str, uuid.UUID] | None = None,
    *,
    controller_epoch: int = CONTROLLER_EPOCH,
    broker_epoch: int = BROKER_EPOCH,
) -> LeaderAndIsrRequest:
    ids = topic_ids or {}
    topics: dict[str, LeaderAndIsrTopicState] = {}
    for p in partitions:
        topic = topics.setdefault(
            p.topic,
            LeaderAndIsrTopicState(
                topic_name=p.topic, topic_id=ids.get(p.topic, uuid.UUID(int=0)), partition_states=[]
            ),
        )
        topic.partition_states.append(
            LeaderAndIsrPartitionStateData(
                partition_index=p.index,
                controller_epoch=controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.in_sync,
                partition_epoch=p.partition_epoch,
                replicas=p.replicas,
                adding_replicas=[],
                removing_replicas=[],
                is_new=True,
            )
        )
    return LeaderAndIsrRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        type=0,
        ungrouped_partition_states=[
            LeaderAndIsrPartitionState(
                topic_name=p.topic,
                partition_index=p.index,
                controller_epoch=controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.in_sync,
                partition_epoch=p.partition_epoch,
                replicas=p.replicas,
                is_new=True,
            )
            for p in partitions
        ],
        topic_states=list(topics.values()),
        live_leaders=[],
    )


@dataclass
class Broker:
    node_id: int
    #: listener name -> (host, port)
    endpoints: dict[str, tuple[str, int]]
    rack: str | None = None


def update_metadata(
    brokers: list[Broker],
    partitions: list[Partition],
    topic_ids: dict[str, uuid.UUID] | None = None,
    *,
    controller_id: int = CONTROLLER_ID,
    controller_epoch: int = CONTROLLER_EPOCH,
    broker_epoch: int = BROKER_EPOCH,
) -> UpdateMetadataRequest:
    ids = topic_ids or {}
    topics: dict[str, UpdateMetadataTopicState] = {}
    for p in partitions:
        topic = topics.setdefault(
            p.topic,
            UpdateMetadataTopicState(
                topic_name=p.topic, topic_id=ids.get(p.topic, uuid.UUID(int=0)), partition_states=[]
            ),
        )
        topic.partition_states.append(
            UpdateMetadataPartitionStateData(
                partition_index=p.index,
                controller_epoch=controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.in_sync,
                zk_version=p.partition_epoch,
                replicas=p.replicas,
                offline_replicas=p.offline,
            )
        )
    first = {b.node_id: next(iter(b.endpoints.values())) for b in brokers}
    return UpdateMetadataRequest(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        ungrouped_partition_states=[
            UpdateMetadataPartitionState(
                topic_name=p.topic,
                partition_index=p.index,
                controller_epoch=controller_epoch,
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                isr=p.in_sync,
                zk_version=p.partition_epoch,
                replicas=p.replicas,
                offline_replicas=p.offline,
            )
            for p in partitions
        ],
        topic_states=list(topics.values()),
        live_brokers=[
            UpdateMetadataBroker(
                id=b.node_id,
                v0_host=first[b.node_id][0],
                v0_port=first[b.node_id][1],
                endpoints=[
                    UpdateMetadataEndpoint(port=port, host=host, listener=name, security_protocol=PLAINTEXT)
                    for name, (host, port) in b.endpoints.items()
                ],
                rack=b.rack,
            )
            for b in brokers
        ],
    )


def stop_replica(
    partitions: list[tuple[str, int]],
    *,
    delete: bool,
    leader_epoch: int = -1,
    controller_epoch: int = CONTROLLER_EPOCH,
    broker_epoch: int = BROKER_EPOCH,
) -> StopReplicaRequest:
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    return StopReplicaRequest(
        controller_id=CONTROLLER_ID,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        delete_partitions=delete,
        ungrouped_partitions=[StopReplicaPartitionV0(topic_name=t, partition_index=i) for t, i in partitions],
        topics=[StopReplicaTopicV1(name=t, partition_indexes=indexes) for t, indexes in topics.items()],
        topic_states=[
            StopReplicaTopicState(
                topic_name=t,
                partition_states=[
                    StopReplicaPartitionState(
                        partition_index=i, leader_epoch=leader_epoch, delete_partition=delete
                    )
                    for i in indexes
                ],
            )
            for t, indexes in topics.items()
        ],
    )
