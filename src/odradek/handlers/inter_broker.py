"""The controller's requests to a broker: LeaderAndIsr (key 4), StopReplica (key 5), UpdateMetadata (key 6).

Served only by a ZooKeeper cluster member (Services.join_zookeeper_cluster): a single node neither
advertises them in ApiVersions nor answers them (the connection treats them as an unknown API).
ControlledShutdown (key 7) goes the other way, to the controller, and is the controller's.

Version notes (the versions a Kafka 3.9 ZooKeeper-mode controller sends, up to IBP 3.9):
- Every request is fenced whole first: a broker epoch older than this broker's registration is
  STALE_BROKER_EPOCH, a controller epoch older than the newest seen STALE_CONTROLLER_EPOCH (-1, sent by
  versions without the field, is never stale). The KRaft-migration fields (is_k_raft_controller,
  type) are ignored: odradek clusters have ZooKeeper controllers only.
- LeaderAndIsr v0-1 list partitions ungrouped (v1 adds is_new), v2 groups them by topic and adds the
  broker epoch, v3 adding/removing replicas (reassignment: kept by the controller), v4 flexible, v5
  topic ids and a response grouped by topic id (INCONSISTENT_TOPIC_ID when it contradicts the
  replica's), v6 leader_recovery_state (no unclean recovery here: ignored), v7 is_k_raft_controller.
  Per partition: a leader epoch not newer than the known one is STALE_CONTROLLER_EPOCH, a partition
  whose replicas leave this broker out UNKNOWN_TOPIC_OR_PARTITION, a log that cannot be created
  KAFKA_STORAGE_ERROR. live_leaders is not needed: endpoints come from UpdateMetadata.
- StopReplica v0 lists partitions ungrouped with one delete flag, v1 groups by topic and adds the
  broker epoch, v2 flexible, v3 per-partition delete flags and leader epochs (an older epoch is
  FENCED_LEADER_EPOCH; -2, a topic deletion, and -1, no epoch, always stop), v4 is_k_raft_controller.
- UpdateMetadata v0 gives each broker one plaintext host/port, v1 endpoints, v2 racks, v3 listener
  names, v4 offline replicas, v5 groups partitions by topic and adds the broker epoch, v6 flexible,
  v7 topic ids, v8 is_k_raft_controller and a tagged type. Before v3 an endpoint's listener is named
  after its security protocol, as Kafka does.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Protocol

from odradek.cluster.control_requests import (
    LEADER_DURING_DELETE,
    ControllerStamp,
    PartitionLeadership,
    StopReplicaPartition,
)
from odradek.cluster.metadata import BrokerEndpoint, BrokerMode, LiveBroker
from odradek.cluster.replica_manager import ReplicaManager
from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.leader_and_isr import (
    LeaderAndIsrPartitionError,
    LeaderAndIsrPartitionErrorResult,
    LeaderAndIsrRequest,
    LeaderAndIsrResponse,
    LeaderAndIsrTopicError,
)
from odradek.protocol.messages.stop_replica import (
    StopReplicaPartitionError,
    StopReplicaRequest,
    StopReplicaResponse,
)
from odradek.protocol.messages.update_metadata import (
    UpdateMetadataBroker,
    UpdateMetadataRequest,
    UpdateMetadataResponse,
)
from odradek.protocol.schema import ZERO_UUID
from odradek.security.acl import AclOperation

CLUSTER_ONLY = frozenset({BrokerMode.ZOOKEEPER})
#: Kafka's SecurityProtocol ids: before UpdateMetadata v3 a listener is named after its protocol.
_SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


@handles(ApiKey.LEADER_AND_ISR, 0, 7, modes=CLUSTER_ONLY)
async def handle_leader_and_isr(
    request: LeaderAndIsrRequest, context: RequestContext
) -> LeaderAndIsrResponse:
    version = context.api_version
    partitions = list(_leader_and_isr_partitions(request, version))
    try:
        _require_cluster_action(context)
        outcome = await _replicas(context).become_leader_or_follower(_stamp(request), partitions)
    except KafkaError as error:  # fenced: every partition answers the request's error, as in Kafka
        outcome = {(p.topic, p.partition): error.error_code for p in partitions}
        return _leader_and_isr_response(error.error_code, outcome, partitions, version)
    return _leader_and_isr_response(ErrorCode.NONE, outcome, partitions, version)


@handles(ApiKey.STOP_REPLICA, 0, 4, modes=CLUSTER_ONLY)
async def handle_stop_replica(request: StopReplicaRequest, context: RequestContext) -> StopReplicaResponse:
    partitions = list(_stop_replica_partitions(request, context.api_version))
    try:
        _require_cluster_action(context)
        outcome = await _replicas(context).stop_replicas(_stamp(request), partitions)
    except KafkaError as error:  # a fenced request names no partition, as in Kafka
        return StopReplicaResponse(error_code=error.error_code, partition_errors=[])
    return StopReplicaResponse(
        error_code=ErrorCode.NONE,
        partition_errors=[
            StopReplicaPartitionError(topic_name=topic, partition_index=index, error_code=code)
            for (topic, index), code in outcome.items()
        ],
    )


@handles(ApiKey.UPDATE_METADATA, 0, 8, modes=CLUSTER_ONLY)
async def handle_update_metadata(
    request: UpdateMetadataRequest, context: RequestContext
) -> UpdateMetadataResponse:
    version = context.api_version
    brokers = [_live_broker(broker, version) for broker in request.live_brokers]
    try:
        _require_cluster_action(context)
        partitions = list(_update_metadata_partitions(request, version))
        known = _topic_ids(context, {p.topic for p in partitions if p.leader == LEADER_DURING_DELETE})
        _replicas(context).update_metadata(_stamp(request), brokers, partitions)
    except KafkaError as error:
        return UpdateMetadataResponse(error_code=error.error_code)
    _share_state_of_deleted_topics(context, known)
    return UpdateMetadataResponse(error_code=ErrorCode.NONE)


def _topic_ids(context: RequestContext, names: set[str]) -> dict[str, uuid.UUID]:
    topics = ((name, context.services.cluster.topic(name)) for name in names)
    return {name: topic.topic_id for name, topic in topics if topic is not None}


def _share_state_of_deleted_topics(context: RequestContext, known: dict[str, uuid.UUID]) -> None:
    """Topics the controller deleted (gone from the cache, or there under another id): every share
    group's state of them goes here, on the leaders, the share coordinators and the group coordinators
    (Kafka 4.4's onPartitionsDeleted and on-topics-deleted cleanup; the coordinators' writes are not
    waited for)."""
    cluster = context.services.cluster
    gone = {i for name, i in known.items() if (t := cluster.topic(name)) is None or t.topic_id != i}
    if not gone:
        return
    if context.services.share_partitions is not None:
        for topic_id in gone:
            context.services.share_partitions.topic_deleted(topic_id)
    if context.services.share_coordinator is not None:
        context.services.share_coordinator.forget_topics(gone)
    if context.services.groups is not None:
        context.services.groups.share.topics_deleted(gone)


def _require_cluster_action(context: RequestContext) -> None:
    """With an authorizer, the controller's requests need CLUSTER_ACTION on the cluster (as Kafka's
    KafkaApis): else the whole request is answered CLUSTER_AUTHORIZATION_FAILED."""
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


def _replicas(context: RequestContext) -> ReplicaManager:
    control = context.services.replica_control
    # the registry serves these APIs only in ZooKeeper mode, whose wiring sets the control half
    assert control is not None, "served only in ZooKeeper mode"
    return control


def _stamp(request: LeaderAndIsrRequest | StopReplicaRequest | UpdateMetadataRequest) -> ControllerStamp:
    return ControllerStamp(request.controller_id, request.controller_epoch, request.broker_epoch)


def _topic_id(topic_id: uuid.UUID | None) -> uuid.UUID | None:
    return None if topic_id is None or topic_id == ZERO_UUID else topic_id


# ----- LeaderAndIsr ------------------------------------------------------------------------------------


def _leader_and_isr_partitions(request: LeaderAndIsrRequest, version: int) -> Iterator[PartitionLeadership]:
    if version < 2:
        for p in request.ungrouped_partition_states:
            yield _leadership(p.topic_name, p, p.partition_epoch, is_new=p.is_new)
        return
    for topic in request.topic_states:
        topic_id = _topic_id(topic.topic_id) if version >= 5 else None
        for s in topic.partition_states:
            yield _leadership(topic.topic_name, s, s.partition_epoch, topic_id=topic_id, is_new=s.is_new)


def _leader_and_isr_response(
    code: ErrorCode,
    outcome: dict[tuple[str, int], ErrorCode],
    partitions: list[PartitionLeadership],
    version: int,
) -> LeaderAndIsrResponse:
    if version < 5:
        return LeaderAndIsrResponse(
            error_code=code,
            partition_errors=[
                LeaderAndIsrPartitionError(topic_name=topic, partition_index=index, error_code=error)
                for (topic, index), error in outcome.items()
            ],
        )
    by_topic: dict[str, LeaderAndIsrTopicError] = {}
    ids = {p.topic: p.topic_id for p in partitions}
    for (topic, index), error in outcome.items():
        entry = by_topic.get(topic)
        if entry is None:
            entry = LeaderAndIsrTopicError(topic_id=ids.get(topic) or ZERO_UUID, partition_errors=[])
            by_topic[topic] = entry
        entry.partition_errors.append(
            LeaderAndIsrPartitionErrorResult(partition_index=index, error_code=error)
        )
    return LeaderAndIsrResponse(error_code=code, topics=list(by_topic.values()))


# ----- StopReplica -------------------------------------------------------------------------------------


def _stop_replica_partitions(request: StopReplicaRequest, version: int) -> Iterator[StopReplicaPartition]:
    if version == 0:
        for p in request.ungrouped_partitions:
            yield StopReplicaPartition(p.topic_name, p.partition_index, request.delete_partitions)
    elif version < 3:
        for topic in request.topics:
            for index in topic.partition_indexes:
                yield StopReplicaPartition(topic.name, index, request.delete_partitions)
    else:
        for state in request.topic_states:
            for s in state.partition_states:
                yield StopReplicaPartition(
                    state.topic_name, s.partition_index, s.delete_partition, s.leader_epoch
                )


# ----- UpdateMetadata ----------------------------------------------------------------------------------


def _update_metadata_partitions(
    request: UpdateMetadataRequest, version: int
) -> Iterator[PartitionLeadership]:
    if version < 5:
        for p in request.ungrouped_partition_states:
            offline = list(p.offline_replicas) if version >= 4 else []
            yield _leadership(p.topic_name, p, p.zk_version, offline_replicas=offline)
        return
    for topic in request.topic_states:
        topic_id = _topic_id(topic.topic_id) if version >= 7 else None
        for s in topic.partition_states:
            yield _leadership(
                topic.topic_name,
                s,
                s.zk_version,
                topic_id=topic_id,
                offline_replicas=list(s.offline_replicas),
            )


class PartitionStateFields(Protocol):
    """The fields the partition states of every version of LeaderAndIsr and UpdateMetadata share."""

    @property
    def partition_index(self) -> int: ...

    @property
    def controller_epoch(self) -> int: ...

    @property
    def leader(self) -> int: ...

    @property
    def leader_epoch(self) -> int: ...

    @property
    def isr(self) -> Sequence[int]: ...

    @property
    def replicas(self) -> Sequence[int]: ...


def _leadership(
    topic: str,
    state: PartitionStateFields,
    partition_epoch: int,
    *,
    topic_id: uuid.UUID | None = None,
    offline_replicas: list[int] | None = None,
    is_new: bool = False,
) -> PartitionLeadership:
    """One partition's state from any version of LeaderAndIsr or UpdateMetadata (their partition
    states share these fields; the state znode's version is named per message)."""
    return PartitionLeadership(
        topic=topic,
        partition=state.partition_index,
        controller_epoch=state.controller_epoch,
        leader=state.leader,
        leader_epoch=state.leader_epoch,
        isr=list(state.isr),
        partition_epoch=partition_epoch,
        replicas=list(state.replicas),
        topic_id=topic_id,
        offline_replicas=offline_replicas or [],
        is_new=is_new,
    )


def _live_broker(broker: UpdateMetadataBroker, version: int) -> LiveBroker:
    rack = broker.rack if version >= 2 else None
    if version == 0:
        endpoint = BrokerEndpoint(broker.id, broker.v0_host, broker.v0_port, rack)
        return LiveBroker(broker.id, {"PLAINTEXT": endpoint}, rack)
    endpoints = {}
    for e in broker.endpoints:
        listener = e.listener if version >= 3 else _SECURITY_PROTOCOLS.get(e.security_protocol, "PLAINTEXT")
        endpoints[listener] = BrokerEndpoint(broker.id, e.host, e.port, rack)
    return LiveBroker(broker.id, endpoints, rack)
