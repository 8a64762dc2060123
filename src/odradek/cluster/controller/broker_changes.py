"""Brokers joining, leaving and bouncing (KafkaController.processBrokerChange, onBrokerStartup,
onBrokerFailure; ReplicaStateMachine's OfflineReplica)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection

from odradek.cluster.controller import (
    election,
    leader_elections,
    reassignment,
    requests,
    topic_changes,
)
from odradek.cluster.controller.context import UNKNOWN_ZXID, ControllerContext, PartitionState, TopicPartition
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.controller.unclean import unclean_allowed, warn_if_unclean
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode

logger = logging.getLogger(__name__)


async def on_broker_change(term: ControllerTerm) -> None:
    context = term.context
    current = await term.read_registrations()
    known = context.live_brokers
    joined = sorted(set(current) - set(known))
    dead = sorted(set(known) - set(current))
    bounced = sorted(b for b in set(current) & set(known) if current[b].epoch != known[b].epoch)
    modified = sorted(
        b
        for b in set(current) & set(known)
        if b not in bounced and current[b].registration != known[b].registration
    )
    if joined or dead or bounced:
        logger.info(
            "Controller %d: brokers joined %s, left %s, bounced %s", term.controller_id, joined, dead, bounced
        )
    if joined:
        for broker_id in joined:
            context.live_brokers[broker_id] = current[broker_id]
            term.open_channel(broker_id)
        await on_broker_startup(term, joined)
    if bounced:
        # KafkaController.processBrokerChange: a bounced broker is a failure, then a start-up
        for broker_id in bounced:
            del context.live_brokers[broker_id]
            term.close_channel(broker_id)
        await on_broker_failure(term, bounced)
        for broker_id in bounced:
            context.live_brokers[broker_id] = current[broker_id]
            term.open_channel(broker_id)
        await on_broker_startup(term, bounced)
    if dead:
        for broker_id in dead:
            del context.live_brokers[broker_id]
            term.close_channel(broker_id)
        await on_broker_failure(term, dead)
    if modified:
        for broker_id in modified:
            context.live_brokers[broker_id] = current[broker_id]
            term.open_channel(broker_id)
        term.send_update_metadata(context.live_broker_ids(), [])


async def on_broker_startup(term: ControllerTerm, started: list[int]) -> None:
    context = term.context
    for broker_id in started:  # a broker that registered again has every log dir online again
        context.replicas_on_offline_dirs.pop(broker_id, None)
    existing = context.live_broker_ids() - set(started)
    # the others learn of the new brokers; the new ones get every partition
    term.send_update_metadata(existing, [])
    term.send_update_metadata(started, list(context.all_partitions()))
    for broker_id in started:
        theirs = [
            tp
            for tp in context.partitions_on(broker_id)
            if tp in context.states and tp.topic not in context.topics_being_deleted
        ]
        if theirs:
            term.send(
                broker_id,
                requests.leader_and_isr(context, term.controller_id, broker_id, theirs, term.listener),
            )
    await leader_elections.online_partitions(term, context.partitions_without_live_leader())
    # a replica being added on a broker that was down is told again (KafkaController.onBrokerStartup)
    await reassignment.resume_reassignments(term, started)
    if context.topics_being_deleted:
        # a deletion that waited for a replica on a broker that was down can go on
        await topic_changes.on_topic_deletion(term)


async def on_broker_failure(term: ControllerTerm, failed: Collection[int]) -> None:
    """New leaders for what the failed brokers led, and the failed brokers out of every ISR. A failed
    broker is no longer shutting down (Kafka's onBrokerFailure): also one that bounced, whose new
    incarnation would otherwise be refused every ISR and every election."""
    context = term.context
    failed = set(failed)
    context.shutting_down.difference_update(failed)
    changed: list[TopicPartition] = []
    for tp in list(context.all_partitions()):
        state = context.states.get(tp)
        if state is None or tp.topic in context.topics_being_deleted:
            continue
        if state.leader in failed or any(r in failed for r in state.isr):
            unclean = await unclean_allowed(term, tp, state)
            written = await term.update_state(tp, functools.partial(after_failure, term, failed, tp, unclean))
            if written is not None:
                changed.append(tp)
    term.send_leader_and_isr(changed)
    term.send_update_metadata(context.live_broker_ids(), changed)


def after_failure(
    term: ControllerTerm, failed: Collection[int], tp: TopicPartition, unclean: bool, state: PartitionState
) -> PartitionStateZnode | None:
    context = term.context
    live = context.live_broker_ids()
    znode = state.znode
    if znode.leader not in live:
        # OfflinePartition → OnlinePartition with the offline election
        elected = election.offline_partition_leader(
            context.replicas(tp), znode.isr, context.eligible_for(tp), unclean
        )
        if elected is not None:
            warn_if_unclean(term, tp, znode.isr, elected.leader, "unclean.leader.election.enable")
            return term.offline_state(znode, elected.leader, elected.isr)
    # OfflineReplica: out of the ISR (never the last member), leaderless if it led
    leader, isr = znode.leader, list(znode.isr)
    for replica in sorted(failed):
        if replica in isr or leader == replica:
            leader, isr = election.isr_without_replica(leader, isr, replica)
    if leader not in live:
        leader = -1  # never a stale leader
    if (leader, isr) == (znode.leader, list(znode.isr)):
        return None
    return term.next_state(znode, leader, isr)


async def on_restarts_no_controller_saw(term: ControllerTerm) -> None:
    """At failover, before any LeaderAndIsr: the replicas that registered again after their partition's
    state was written (their broker epoch, a czxid, is newer than the state's mzxid) leave its ISR,
    and lose its leadership, when a replica that stayed registered since is in the ISR.

    A broker that died and came back while no controller watched (it was the controller, or the
    controller changed meanwhile) is live to the new controller, which never saw it bounce. Named
    leader or in the ISR by a state from its previous life, it would lead with the log its crash left
    (the unflushed tail gone) at the same epoch, and the followers would truncate to it: acknowledged
    records lost. Kafka 3.9's ZooKeeper-mode failover (initializeControllerContext) reads only which
    brokers are live, so it has this gap. When every ISR member restarted, none is known to be better:
    the state stays, as in Kafka.
    """
    context = term.context
    for tp, state in list(context.states.items()):
        if tp.topic in context.topics_being_deleted or not _restarted_since(context, state):
            continue
        written = await term.update_state(tp, functools.partial(_without_restarted, term, tp))
        if written is not None:
            logger.warning(
                "Controller %d: %s-%d names brokers that restarted unseen since its state was written "
                "(leader %d, ISR %s); now leader %d, ISR %s",
                term.controller_id,
                tp.topic,
                tp.partition,
                state.leader,
                list(state.isr),
                written.leader,
                list(written.isr),
            )


def _restarted_since(context: ControllerContext, state: PartitionState) -> set[int]:
    """The live leader and ISR members registered after `state` was written."""
    if state.written_zxid == UNKNOWN_ZXID:
        return set()
    named = {state.leader, *state.isr}
    live = context.live_brokers
    return {r for r in named if r in live and live[r].epoch > state.written_zxid}


def _without_restarted(
    term: ControllerTerm, tp: TopicPartition, state: PartitionState
) -> PartitionStateZnode | None:
    decided = leader_and_isr_without_restarted(term.context, tp, state)
    return None if decided is None else term.next_state(state.znode, *decided)


def leader_and_isr_without_restarted(
    context: ControllerContext, tp: TopicPartition, state: PartitionState
) -> tuple[int, list[int]] | None:
    """The leader and ISR without the replicas that restarted since `state` was written, or None to
    leave it (none restarted, or no ISR member stayed registered to take their place)."""
    restarted = _restarted_since(context, state)
    stayed = [r for r in state.isr if context.is_live(r) and r not in restarted]
    if not restarted or not stayed:
        return None
    isr = [r for r in state.isr if r not in restarted]
    leader = state.leader
    if leader in restarted or not context.is_live(leader):
        elected = election.offline_partition_leader(
            context.replicas(tp), isr, context.eligible_for(tp) - restarted
        )
        leader = -1 if elected is None else elected.leader
    return leader, isr
