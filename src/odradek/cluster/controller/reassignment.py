"""Partition reassignment (KIP-455) as Kafka 3.9's ZooKeeper-mode controller runs it
(KafkaController.onPartitionReassignment and its callers).

With RS the replica set, ORS the original replicas and TRS the target ones:
- U: write RS = TRS + ORS, adding = TRS - ORS, removing = ORS - TRS to /brokers/topics/<topic> (a new
  controller resumes from there), then into the context; replicas an earlier reassignment was adding
  and this one no longer wants are stopped and deleted.
- A (some target replica is not in the ISR yet): bump the leader epoch and send LeaderAndIsr to RS
  (the new replicas start following), UpdateMetadata to every broker (Metadata shows RS).
- B (every target replica is in the ISR): RS = TRS; a new leader from TRS if the current one is not
  in it; the removed replicas leave the ISR and are stopped and deleted (StopReplica delete=true);
  the final assignment is written; UpdateMetadata to every broker.
`on_isr_change` moves a partition from A to B: the controller calls it whenever it learns that a
partition's ISR changed (AlterPartition), and when a broker of a reassignment comes back.
Cancelling (a null target) reassigns to the original replicas, which are in sync: B at once.
Plans written to /admin/reassign_partitions (the tool's way before KIP-455) are read too:
`on_zk_reassignment`, each partition leaving the plan when its reassignment completes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from odradek.cluster.controller import election, requests, topic_changes, zk_state
from odradek.cluster.controller.context import PartitionState, TopicPartition
from odradek.cluster.controller.replica_assignment import ReassignmentError, ReplicaAssignment
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.zookeeper import reassign_znode, topics
from odradek.cluster.zookeeper.controller_fence import ANY_VERSION
from odradek.cluster.zookeeper.topic_znodes import NO_LEADER, PartitionStateZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.protocol.error_codes import ErrorCode

logger = logging.getLogger(__name__)


NO_ERROR = ReassignmentError(ErrorCode.NONE)


async def on_alter_reassignments(
    term: ControllerTerm,
    reassignments: Mapping[TopicPartition, Sequence[int] | None],
    allow_replication_factor_change: bool = True,
) -> dict[TopicPartition, ReassignmentError]:
    """KafkaController.processApiPartitionReassignment: a target replica list starts (or replaces) a
    reassignment, None cancels the one in progress."""
    context = term.context
    results: dict[TopicPartition, ReassignmentError] = {}
    # the latest reassignment wins: the API's replace those of /admin/reassign_partitions
    await _remove_from_plan(term, lambda tp, _: tp in reassignments)
    for tp, target in sorted(reassignments.items()):
        refused = None if target is None else _validate(term, tp, target, allow_replication_factor_change)
        if refused is not None:
            results[tp] = refused
            continue
        current = context.full_assignment(tp)
        if target is None and not current.is_being_reassigned:
            results[tp] = ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
            continue
        if tp.topic in context.topics_being_deleted or not context.replicas(tp):
            results[tp] = ReassignmentError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
            )
            continue
        wanted = current.reassign_to(current.origin_replicas if target is None else target)
        logger.info(
            "Controller %d: %s %s-%d from %s to %s",
            term.controller_id,
            "cancelling the reassignment of" if target is None else "reassigning",
            tp.topic,
            tp.partition,
            current.origin_replicas,
            wanted.target_replicas,
        )
        await on_partition_reassignment(term, tp, wanted)
        results[tp] = NO_ERROR
    return results


def list_reassignments(
    term: ControllerTerm, partitions: Iterable[TopicPartition] | None
) -> dict[TopicPartition, ReplicaAssignment]:
    """KafkaController.processListPartitionReassignments: those of `partitions` (None: all) that move."""
    context = term.context
    wanted = sorted(context.reassigning) if partitions is None else partitions
    return {tp: context.reassigning[tp] for tp in wanted if tp in context.reassigning}


async def on_isr_change(term: ControllerTerm, topic: str, partition: int) -> None:
    """A partition's ISR changed: if it is being reassigned and every target replica is now in sync,
    complete the reassignment (KafkaController.maybeCompleteReassignment). The state is read again
    from ZooKeeper, as Kafka does: whoever changed the ISR may not have told the context."""
    context = term.context
    tp = TopicPartition(topic, partition)
    moving = context.reassigning.get(tp)
    if moving is None or topic in context.topics_being_deleted:
        return
    state = await asyncio.to_thread(zk_state.read_partition_state, term.zk, tp)
    if state is None:
        return
    context.states[tp] = state
    if set(moving.target_replicas) <= set(state.isr):
        logger.info(
            "Controller %d: target replicas %s of %s-%d are in sync",
            term.controller_id,
            moving.target_replicas,
            topic,
            partition,
        )
        await on_partition_reassignment(term, tp, moving)


async def on_zk_reassignment(term: ControllerTerm) -> set[TopicPartition]:
    """/admin/reassign_partitions appeared (KafkaController.processZkPartitionReassignment): start
    each of its partitions' reassignments; the partitions that cannot be are removed from it."""
    try:
        plan = await asyncio.to_thread(reassign_znode.read_plan, term.zk)
    except MalformedZnodeError as error:
        logger.warning(
            "Controller %d ignores %s: %s", term.controller_id, "/admin/reassign_partitions", error
        )
        return set()
    if not plan:
        return set()
    context = term.context
    started: set[TopicPartition] = set()
    for (topic, partition), target in sorted(plan.items()):
        tp = TopicPartition(topic, partition)
        if topic in context.topics_being_deleted or not context.replicas(tp) or not target:
            continue
        await on_partition_reassignment(term, tp, context.full_assignment(tp).reassign_to(target))
        started.add(tp)
    failed = {TopicPartition(*key) for key in plan} - started
    if failed:
        logger.warning("Controller %d: cannot reassign %s from the plan", term.controller_id, sorted(failed))
        await _remove_from_plan(term, lambda tp, _: tp in failed)
    return started


async def resume_reassignments(
    term: ControllerTerm, on_brokers: Iterable[int] | None = None, skip: Iterable[TopicPartition] = ()
) -> None:
    """On failover (every reassignment a previous controller left) or when brokers start (those with a
    replica on them, which must be told again): KafkaController.maybeResumeReassignments."""
    context = term.context
    brokers = None if on_brokers is None else set(on_brokers)
    skipped = set(skip)
    for tp, moving in sorted(context.reassigning.items()):
        if tp.topic in context.topics_being_deleted or tp in skipped:
            continue
        if brokers is None or brokers & set(moving.replicas):
            await on_partition_reassignment(term, tp, moving)


async def on_partition_reassignment(
    term: ControllerTerm, tp: TopicPartition, wanted: ReplicaAssignment
) -> None:
    """KafkaController.onPartitionReassignment: phase U, then A or B (module docstring)."""
    context = term.context
    current = context.full_assignment(tp)
    if current != wanted:
        await _write_assignment(term, tp, wanted)
        context.set_full_assignment(tp, wanted)
        unneeded = [r for r in current.replicas if r not in wanted.replicas]
        if unneeded:
            await _stop_removed_replicas(term, tp, unneeded)
    state = context.states.get(tp)
    if state is None:
        return  # a partition with no state yet: its replicas are told when it gets one
    if wanted.is_being_reassigned and not set(wanted.target_replicas) <= set(state.isr):
        # A: same leader and ISR, a new leader epoch, so that every replica takes the new RS
        await term.update_state(tp, functools.partial(_bump_leader_epoch, term))
        term.send_leader_and_isr([tp], exclude=wanted.adding)
        term.send_leader_and_isr([tp], is_new=[tp], exclude=wanted.origin_replicas)
        term.send_update_metadata(context.live_broker_ids(), [tp])
        return
    # B: complete
    completed = ReplicaAssignment.of(wanted.target_replicas)
    context.set_full_assignment(tp, completed)
    await term.update_state(tp, functools.partial(_leader_in_target, term, tp))
    term.send_leader_and_isr([tp])
    if wanted.removing:
        await _stop_removed_replicas(term, tp, list(wanted.removing))
    await _write_assignment(term, tp, completed)
    await _remove_from_plan(term, lambda p, r: p == tp and list(r) == list(completed.replicas))
    term.send_update_metadata(context.live_broker_ids(), [tp])
    logger.info(
        "Controller %d: %s-%d reassigned to %s",
        term.controller_id,
        tp.topic,
        tp.partition,
        completed.replicas,
    )
    if not any(moving.topic == tp.topic for moving in context.reassigning):
        # a deletion that waited for the topic's reassignments can start (resumeDeletionForTopics)
        marked = await asyncio.to_thread(topics.topics_marked_for_deletion, term.zk)
        if tp.topic in marked:
            await topic_changes.delete_topic(term, tp.topic)


# -- steps -------------------------------------------------------------------------------------------


def _validate(
    term: ControllerTerm, tp: TopicPartition, target: Sequence[int], allow_replication_factor_change: bool
) -> ReassignmentError | None:
    """KafkaController.validateReplicas (and KIP-860's allow_replication_factor_change)."""
    context = term.context
    current = context.full_assignment(tp)
    return validate_target(
        target,
        current.reassign_to(target).adding,
        current.origin_replicas,
        context.live_broker_ids(),
        allow_replication_factor_change,
    )


def validate_target(
    target: Sequence[int],
    adding: Sequence[int],
    origin: Sequence[int],
    live: Collection[int],
    allow_replication_factor_change: bool,
) -> ReassignmentError | None:
    """A target replica list as KafkaController.validateReplicas checks it: `adding` are the replicas it
    adds, `origin` the partition's replicas before any reassignment, `live` the live brokers."""
    refused = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if not target:
        return ReassignmentError(refused, "Empty replica list specified in partition reassignment.")
    if len(set(target)) != len(target):
        return ReassignmentError(
            refused, f"Duplicate replica ids in partition reassignment replica list: {list(target)}"
        )
    if any(r < 0 for r in target):
        return ReassignmentError(refused, f"Invalid broker id in replica list: {list(target)}")
    if not set(adding) <= set(live):
        return ReassignmentError(
            refused,
            f"Replica assignment has brokers that are not alive. Replica list: {list(adding)}, "
            f"live broker list: {sorted(live)}",
        )
    if not allow_replication_factor_change and origin and len(origin) != len(target):
        return ReassignmentError(
            refused,
            f"The replication factor is changed from {len(origin)} to {len(target)}, "
            "but allowReplicationFactorChange is false.",
        )
    return None


def reassign_in_a_cluster_of_one(
    cluster: ClusterMetadata,
    node_id: int,
    reassignments: Mapping[TopicPartition, Sequence[int] | None],
    allow_replication_factor_change: bool = True,
) -> dict[TopicPartition, ReassignmentError]:
    """AlterPartitionReassignments on a single node, the controller and only broker of a cluster of one
    (Kafka 3.9's lone broker serves it so): the only target that passes validation is the broker the
    partition is on already, a reassignment complete at once; so none is ever in progress to cancel
    (and ListPartitionReassignments lists none)."""
    results: dict[TopicPartition, ReassignmentError] = {}
    for tp, target in sorted(reassignments.items()):
        state = cluster.partition(tp.topic, tp.partition)
        origin = list(state.replicas) if state is not None else []
        if target is not None:
            adding = [r for r in target if r not in origin]
            refused = validate_target(target, adding, origin, [node_id], allow_replication_factor_change)
            if refused is not None:
                results[tp] = refused
                continue
        if target is None:
            results[tp] = ReassignmentError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
        elif state is None:
            results[tp] = ReassignmentError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
            )
        else:
            results[tp] = NO_ERROR
    return results


async def _write_assignment(term: ControllerTerm, tp: TopicPartition, assignment: ReplicaAssignment) -> None:
    """/brokers/topics/<topic> with `assignment` for `tp` and the context's for the topic's others
    (KafkaController.updateReplicaAssignmentForPartition: fenced by the controller epoch only)."""
    context = term.context
    znode = zk_state.topic_assignment_znode(context, tp.topic)
    partitions = {**znode.partitions, tp.partition: list(assignment.replicas)}
    adding = {p: r for p, r in znode.adding_replicas.items() if p != tp.partition}
    removing = {p: r for p, r in znode.removing_replicas.items() if p != tp.partition}
    if assignment.is_being_reassigned:
        adding[tp.partition] = list(assignment.adding)
        removing[tp.partition] = list(assignment.removing)
    written = type(znode)(partitions, znode.topic_id, adding, removing)
    await asyncio.to_thread(topics.set_topic_assignment, term.fence, tp.topic, written, ANY_VERSION)


async def _stop_removed_replicas(term: ControllerTerm, tp: TopicPartition, removed: list[int]) -> None:
    """ReplicaStateMachine's OfflineReplica then NonExistentReplica for `removed`: out of the ISR (the
    leader is told), then StopReplica with delete to each, which removes its copy."""
    context = term.context
    if tp in context.states:
        shrunk = await term.update_state(tp, functools.partial(_without_replicas, term, removed))
        if shrunk is not None:
            term.send_leader_and_isr([tp], exclude=removed)
    for replica in removed:
        if context.is_live(replica):
            term.send(
                replica,
                requests.stop_replica(
                    context, term.controller_id, replica, [tp], delete=True, topic_deleted=False
                ),
            )


async def _remove_from_plan(
    term: ControllerTerm, remove: Callable[[TopicPartition, Sequence[int]], bool]
) -> None:
    """KafkaController.maybeRemoveFromZkReassignment: the znode keeps the other partitions (and goes
    when none is left)."""
    try:
        plan = await asyncio.to_thread(reassign_znode.read_plan, term.zk)
    except MalformedZnodeError:
        return
    if not plan:
        return
    kept = {key: r for key, r in plan.items() if not remove(TopicPartition(*key), r)}
    if kept != plan:
        await asyncio.to_thread(reassign_znode.write_plan, term.fence, kept)


def _bump_leader_epoch(term: ControllerTerm, state: PartitionState) -> PartitionStateZnode:
    return term.next_state(state.znode, state.leader, list(state.isr))


def _leader_in_target(term: ControllerTerm, tp: TopicPartition, state: PartitionState) -> PartitionStateZnode:
    """KafkaController.moveReassignedPartitionLeaderIfRequired: a leader outside the target replicas
    (or offline) gives way to the first target replica that is live and in the ISR; else only the
    leader epoch moves, so that every replica takes the final replica set."""
    context = term.context
    target = context.replicas(tp)
    if state.leader in target and context.is_live(state.leader):
        return term.next_state(state.znode, state.leader, list(state.isr))
    leader = next((r for r in target if r in context.eligible_for(tp) and r in state.isr), None)
    if leader is None:
        logger.warning(
            "Partition %s-%d: no target replica of %s is live and in the ISR %s to lead",
            tp.topic,
            tp.partition,
            target,
            list(state.isr),
        )
        return term.next_state(state.znode, NO_LEADER, list(state.isr))
    return term.next_state(state.znode, leader, list(state.isr))


def _without_replicas(
    term: ControllerTerm, removed: list[int], state: PartitionState
) -> PartitionStateZnode | None:
    leader, isr = state.leader, list(state.isr)
    for replica in removed:
        if replica in isr or replica == leader:
            leader, isr = election.isr_without_replica(leader, isr, replica)
    if (leader, isr) == (state.leader, list(state.isr)):
        return None
    return term.next_state(state.znode, leader, isr)
