"""Leader elections: new and offline partitions (PartitionStateMachine.triggerOnlinePartitionStateChange),
controlled shutdown (KafkaController.doControlledShutdown), preferred and unclean elections on request
(ElectLeaders) and the automatic preferred election (auto.leader.rebalance.enable)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from odradek.cluster.controller import election, events, rebalance, requests
from odradek.cluster.controller.context import PartitionState, TopicPartition
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.controller.unclean import unclean_allowed, warn_if_unclean
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode
from odradek.protocol.error_codes import ErrorCode

logger = logging.getLogger(__name__)

PREFERRED_ELECTION = election.PREFERRED_ELECTION
UNCLEAN_ELECTION = election.UNCLEAN_ELECTION


async def online_partitions(term: ControllerTerm, partitions: Iterable[TopicPartition]) -> None:
    """New partitions get their first state, offline ones a leader if a replica may lead
    (PartitionStateMachine.triggerOnlinePartitionStateChange); then LeaderAndIsr and UpdateMetadata."""
    context = term.context
    created: list[TopicPartition] = []
    elected: list[TopicPartition] = []
    for tp in partitions:
        if tp.topic in context.topics_being_deleted:
            continue
        if tp not in context.states:
            if await term.create_state(tp):
                created.append(tp)
                continue
            if tp not in context.states:
                continue  # no live replica: stays a new partition until one comes
        unclean = await unclean_allowed(term, tp, context.states[tp])
        written = await term.update_state(tp, functools.partial(offline_election, term, tp, unclean))
        if written is not None:
            elected.append(tp)
    changed = created + elected
    if not changed:
        return
    term.send_leader_and_isr(changed, is_new=set(created))
    term.send_update_metadata(context.live_broker_ids(), changed)


def offline_election(
    term: ControllerTerm, tp: TopicPartition, unclean: bool, state: PartitionState
) -> PartitionStateZnode | None:
    context = term.context
    if context.is_live(state.leader):
        return None  # someone else (a previous try) already elected one
    chosen = election.offline_partition_leader(
        context.replicas(tp), state.isr, context.eligible_for(tp), unclean
    )
    if chosen is None:
        logger.warning(
            "Partition %s-%d stays offline: no live replica of %s is in the ISR %s",
            tp.topic,
            tp.partition,
            context.replicas(tp),
            list(state.isr),
        )
        return None
    warn_if_unclean(term, tp, state.isr, chosen.leader, "unclean.leader.election.enable")
    return term.offline_state(state.znode, chosen.leader, chosen.isr)


async def on_controlled_shutdown(
    term: ControllerTerm, broker_id: int, broker_epoch: int
) -> events.ControlledShutdownResult:
    """KafkaController.doControlledShutdown."""
    context = term.context
    known = context.live_brokers.get(broker_id)
    if known is None:
        return events.ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE, [])
    # -1: a broker that does not send its epoch (ControlledShutdown v0-v1) is not checked
    if broker_epoch != -1 and broker_epoch < known.epoch:
        return events.ControlledShutdownResult(ErrorCode.STALE_BROKER_EPOCH, [])
    logger.info("Controller %d: controlled shutdown of broker %d", term.controller_id, broker_id)
    context.shutting_down.add(broker_id)
    # with a single replica there is nowhere to move: those stay led until the broker stops
    to_act = [
        tp
        for tp in context.partitions_on(broker_id)
        if len(context.replicas(tp)) > 1
        and tp in context.states
        and tp.topic not in context.topics_being_deleted
    ]
    led = [tp for tp in to_act if context.states[tp].leader == broker_id]
    followed = [tp for tp in to_act if context.states[tp].leader != broker_id]
    moved = [
        tp
        for tp in led
        if await term.update_state(tp, functools.partial(controlled_shutdown_election, term, tp)) is not None
    ]
    term.send_leader_and_isr(moved)
    term.send_update_metadata(context.live_broker_ids(), moved)
    if followed:
        term.send(
            broker_id, requests.stop_replica(context, term.controller_id, broker_id, followed, delete=False)
        )
    shrunk = [
        tp
        for tp in followed
        if await term.update_state(tp, functools.partial(without_replica, term, broker_id)) is not None
    ]
    term.send_leader_and_isr(shrunk, exclude={broker_id})
    term.send_update_metadata(context.live_broker_ids(), shrunk)
    # As Kafka's replicatedPartitionsBrokerLeads: a single-replica partition has nowhere to go, and
    # waiting for it would only hold the shutdown until its retries run out.
    remaining = [tp for tp in context.partitions_led_by([broker_id]) if len(context.replicas(tp)) > 1]
    return events.ControlledShutdownResult(ErrorCode.NONE, remaining)


def controlled_shutdown_election(
    term: ControllerTerm, tp: TopicPartition, state: PartitionState
) -> PartitionStateZnode | None:
    context = term.context
    if state.leader not in context.shutting_down:
        return None
    chosen = election.controlled_shutdown_leader(
        context.replicas(tp), state.isr, context.live_broker_ids(), context.shutting_down
    )
    return None if chosen is None else term.next_state(state.znode, chosen.leader, chosen.isr)


def without_replica(term: ControllerTerm, replica: int, state: PartitionState) -> PartitionStateZnode | None:
    """ReplicaStateMachine's OfflineReplica: out of the ISR (not if it is the last member)."""
    if replica not in state.isr:
        return None
    leader, isr = election.isr_without_replica(state.leader, state.isr, replica)
    if isr == list(state.isr) and leader == state.leader:
        return None
    return term.next_state(state.znode, leader, isr)


async def on_elect_leaders(
    term: ControllerTerm, election_type: int, partitions: list[TopicPartition] | None
) -> dict[TopicPartition, ErrorCode]:
    """KafkaController.processReplicaLeaderElection for ElectLeaders: None means every partition."""
    context = term.context
    wanted = list(context.all_partitions()) if partitions is None else partitions
    errors: dict[TopicPartition, ErrorCode] = {}
    elected: list[TopicPartition] = []
    for tp in wanted:
        state = context.states.get(tp)
        if state is None:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif tp.topic in context.topics_being_deleted:
            errors[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION  # as Kafka: "The topic is being deleted"
        elif election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
            errors[tp] = ErrorCode.INVALID_REQUEST
        elif election.election_not_needed(
            election_type, state.leader, context.replicas(tp), context.live_broker_ids()
        ):
            errors[tp] = ErrorCode.ELECTION_NOT_NEEDED
        elif election_type == PREFERRED_ELECTION:
            if await term.update_state(tp, functools.partial(preferred_election, term, tp)) is not None:
                errors[tp] = ErrorCode.NONE
                elected.append(tp)
            else:
                errors[tp] = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        else:
            if await term.update_state(tp, functools.partial(unclean_election, term, tp)) is not None:
                errors[tp] = ErrorCode.NONE
                elected.append(tp)
            else:
                errors[tp] = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    term.send_leader_and_isr(elected)
    term.send_update_metadata(context.live_broker_ids(), elected)
    return errors


def elect_in_a_cluster_of_one(
    cluster: ClusterMetadata, node_id: int, election_type: int, partitions: list[TopicPartition] | None
) -> dict[TopicPartition, ErrorCode]:
    """ElectLeaders on a single node, the controller and only broker of a cluster of one (Kafka 3.9's
    lone broker serves it so): it leads every partition and is its only replica, so no election is
    ever needed. None means every partition."""
    wanted = (
        [TopicPartition(t.name, p.partition) for t in cluster.topics.values() for p in t.partitions]
        if partitions is None
        else partitions
    )
    errors: dict[TopicPartition, ErrorCode] = {}
    for tp in wanted:
        state = cluster.partition(tp.topic, tp.partition)
        if state is None:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        elif election_type not in (PREFERRED_ELECTION, UNCLEAN_ELECTION):
            errors[tp] = ErrorCode.INVALID_REQUEST
        elif election.election_not_needed(election_type, state.leader_id, state.replicas, [node_id]):
            errors[tp] = ErrorCode.ELECTION_NOT_NEEDED
        else:  # a partition this node does not lead: none in a cluster of one
            errors[tp] = (
                ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                if election_type == PREFERRED_ELECTION
                else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
            )
    return errors


async def on_auto_rebalance(term: ControllerTerm) -> None:
    context = term.context
    partitions = [tp for tp in context.all_partitions() if tp.topic not in context.topics_being_deleted]
    candidates = rebalance.imbalanced_partitions(
        {tp: context.replicas(tp) for tp in partitions},
        {tp: context.states[tp].leader for tp in partitions if tp in context.states},
        term.config.leader_imbalance_per_broker_percentage,
        context.eligible_broker_ids(),
    )
    elected = [
        tp
        for tp in candidates
        if await term.update_state(tp, functools.partial(preferred_election, term, tp)) is not None
    ]
    if elected:
        logger.info("Controller %d: preferred leaders back for %s", term.controller_id, elected)
        term.send_leader_and_isr(elected)
        term.send_update_metadata(context.live_broker_ids(), elected)


def preferred_election(
    term: ControllerTerm, tp: TopicPartition, state: PartitionState
) -> PartitionStateZnode | None:
    context = term.context
    replicas = context.replicas(tp)
    if replicas and state.leader == replicas[0]:
        return None
    chosen = election.preferred_replica_leader(replicas, state.isr, context.eligible_for(tp))
    return None if chosen is None else term.next_state(state.znode, chosen.leader, chosen.isr)


def unclean_election(
    term: ControllerTerm, tp: TopicPartition, state: PartitionState
) -> PartitionStateZnode | None:
    context = term.context
    if context.is_live(state.leader):
        return None
    chosen = election.offline_partition_leader(
        context.replicas(tp), state.isr, context.eligible_for(tp), unclean=True
    )
    if chosen is None:
        return None
    warn_if_unclean(term, tp, state.isr, chosen.leader, "ElectLeaders UNCLEAN")
    return term.offline_state(state.znode, chosen.leader, chosen.isr)
