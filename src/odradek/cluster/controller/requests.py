"""LeaderAndIsr, UpdateMetadata and StopReplica built from the controller's context (Kafka's
ControllerBrokerRequestBatch), at the versions a Kafka 3.9 ZooKeeper-mode controller sends (reference
§4: LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4; the highest odradek's codec knows).
ControllerTerm.send sends them at inter.broker.protocol.version's versions instead (older ones, down
to LeaderAndIsr v5, UpdateMetadata v7 and StopReplica v3 at 3.0-IV1, only leave fields out)."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from odradek.cluster.controller.context import ControllerContext, TopicPartition
from odradek.cluster.zookeeper.broker_znode import ListenerEndpoint
from odradek.protocol.messages.leader_and_isr import (
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionStateData,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
)
from odradek.protocol.messages.stop_replica import (
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from odradek.protocol.messages.update_metadata import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionStateData,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from odradek.protocol.schema import Request

LEADER_AND_ISR_VERSION = 7
UPDATE_METADATA_VERSION = 8
STOP_REPLICA_VERSION = 4
#: LeaderAndIsr.LeaderDuringDelete: the leader UpdateMetadata gives a partition whose topic is deleted.
LEADER_DURING_DELETE = -2
#: LeaderAndIsr.EpochDuringDelete: the leader epoch of StopReplica(delete=true) for a deleted topic.
EPOCH_DURING_DELETE = -2
#: LeaderAndIsr `type`: incremental, as Kafka's ZooKeeper-mode controller sends it.
INCREMENTAL = 0
#: SecurityProtocol ids, as UpdateMetadata carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
NO_TOPIC_ID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    """A request for one broker, with the version to send it at."""

    request: Request
    version: int


def inter_broker_endpoint(
    context: ControllerContext, broker_id: int, listener: str
) -> ListenerEndpoint | None:
    """The endpoint of `broker_id` on the inter-broker listener, None if it does not advertise it."""
    broker = context.live_brokers.get(broker_id)
    if broker is None:
        return None
    return next((e for e in broker.registration.endpoints if e.listener_name == listener), None)


def leader_and_isr(
    context: ControllerContext,
    controller_id: int,
    target: int,
    partitions: Iterable[TopicPartition],
    listener: str,
    is_new: Collection[TopicPartition] = (),
) -> BrokerRequest:
    """LeaderAndIsr for `target` about `partitions` (those with a state), with their leaders' endpoints."""
    by_topic: dict[str, list[LeaderAndIsrPartitionStateData]] = {}
    leaders: set[int] = set()
    for tp in sorted(set(partitions)):
        state = context.states.get(tp)
        if state is None:
            continue
        moving = context.full_assignment(tp)
        by_topic.setdefault(tp.topic, []).append(
            LeaderAndIsrPartitionStateData(
                partition_index=tp.partition,
                controller_epoch=state.znode.controller_epoch,
                leader=state.leader,
                leader_epoch=state.znode.leader_epoch,
                isr=list(state.isr),
                partition_epoch=state.partition_epoch,
                replicas=list(moving.replicas),
                adding_replicas=list(moving.adding),
                removing_replicas=list(moving.removing),
                is_new=tp in is_new,
                leader_recovery_state=state.znode.leader_recovery_state,
            )
        )
        leaders.add(state.leader)
    live_leaders = []
    for leader in sorted(leaders):
        endpoint = inter_broker_endpoint(context, leader, listener)
        if endpoint is not None:
            live_leaders.append(
                LeaderAndIsrLiveLeader(broker_id=leader, host_name=endpoint.host, port=endpoint.port)
            )
    request = LeaderAndIsrRequest(
        controller_id=controller_id,
        is_k_raft_controller=False,
        controller_epoch=context.epoch,
        broker_epoch=_broker_epoch(context, target),
        type=INCREMENTAL,
        ungrouped_partition_states=[],
        topic_states=[
            LeaderAndIsrTopicState(
                topic_name=topic,
                topic_id=context.topic_ids.get(topic, NO_TOPIC_ID),
                partition_states=states,
            )
            for topic, states in by_topic.items()
        ],
        live_leaders=live_leaders,
    )
    return BrokerRequest(request, LEADER_AND_ISR_VERSION)


def update_metadata(
    context: ControllerContext,
    controller_id: int,
    target: int,
    partitions: Iterable[TopicPartition],
    deleting: Mapping[str, uuid.UUID] | None = None,
) -> BrokerRequest:
    """UpdateMetadata for `target`: every live broker with all its endpoints, and `partitions`' states
    (those of topics in `deleting` with leader -2, which tells brokers to forget them)."""
    live = context.live_broker_ids()
    by_topic: dict[str, list[UpdateMetadataPartitionStateData]] = {}
    for tp in sorted(set(partitions)):
        state = context.states.get(tp)
        if state is None:
            continue
        replicas = context.replicas(tp)
        deleted = deleting is not None and tp.topic in deleting
        by_topic.setdefault(tp.topic, []).append(
            UpdateMetadataPartitionStateData(
                partition_index=tp.partition,
                controller_epoch=state.znode.controller_epoch,
                leader=LEADER_DURING_DELETE if deleted else state.leader,
                leader_epoch=state.znode.leader_epoch,
                isr=list(state.isr),
                zk_version=state.partition_epoch,
                replicas=replicas,
                # Kafka's isReplicaOnline: a live broker's replica on a failed log dir is offline too
                offline_replicas=[r for r in replicas if r not in live or context.on_offline_dir(r, tp)],
            )
        )
    brokers = [
        UpdateMetadataBroker(
            id=broker.broker_id,
            v0_host="",
            v0_port=-1,
            endpoints=[
                UpdateMetadataEndpoint(
                    port=e.port,
                    host=e.host,
                    listener=e.listener_name,
                    security_protocol=SECURITY_PROTOCOL_IDS.get(e.security_protocol, 0),
                )
                for e in broker.registration.endpoints
            ],
            rack=broker.registration.rack,
        )
        for _, broker in sorted(context.live_brokers.items())
    ]
    request = UpdateMetadataRequest(
        controller_id=controller_id,
        is_k_raft_controller=False,
        type=0,
        controller_epoch=context.epoch,
        broker_epoch=_broker_epoch(context, target),
        ungrouped_partition_states=[],
        topic_states=[
            UpdateMetadataTopicState(
                topic_name=topic,
                topic_id=context.topic_ids.get(topic, NO_TOPIC_ID),
                partition_states=states,
            )
            for topic, states in by_topic.items()
        ],
        live_brokers=brokers,
    )
    return BrokerRequest(request, UPDATE_METADATA_VERSION)


def stop_replica(
    context: ControllerContext,
    controller_id: int,
    target: int,
    partitions: Iterable[TopicPartition],
    delete: bool,
    topic_deleted: bool = True,
) -> BrokerRequest:
    """StopReplica for `target`; partitions of a deleted topic carry leader epoch -2 (EpochDuringDelete),
    others (a replica a reassignment removes, `topic_deleted` False) their current leader epoch."""
    by_topic: dict[str, list[StopReplicaPartitionState]] = {}
    for tp in sorted(set(partitions)):
        state = context.states.get(tp)
        if delete and topic_deleted:
            epoch = EPOCH_DURING_DELETE
        else:
            epoch = state.znode.leader_epoch if state else -1
        by_topic.setdefault(tp.topic, []).append(
            StopReplicaPartitionState(
                partition_index=tp.partition, leader_epoch=epoch, delete_partition=delete
            )
        )
    request = StopReplicaRequest(
        controller_id=controller_id,
        is_k_raft_controller=False,
        controller_epoch=context.epoch,
        broker_epoch=_broker_epoch(context, target),
        delete_partitions=delete,
        ungrouped_partitions=[],
        topics=[],
        topic_states=[
            StopReplicaTopicState(topic_name=topic, partition_states=states)
            for topic, states in by_topic.items()
        ],
    )
    return BrokerRequest(request, STOP_REPLICA_VERSION)


def _broker_epoch(context: ControllerContext, target: int) -> int:
    # the target's own epoch: a broker refuses a request meant for an earlier incarnation of itself
    broker = context.live_brokers.get(target)
    return broker.epoch if broker is not None else -1
