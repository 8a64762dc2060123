"""A broker's failed log dir (KafkaController.processLogDirEventNotification, onBrokerLogDirFailure,
processLeaderAndIsrResponseReceived, onReplicasBecomeOffline).

A broker whose log dir failed writes /log_dir_event_notification/log_dir_event_<n>. The controller
then sends LeaderAndIsr, at the partitions' current states, for every replica on that broker: the
broker answers KAFKA_STORAGE_ERROR for those on the failed dir. Any LeaderAndIsr answer does the same
(at failover, after an election): a replica answered KAFKA_STORAGE_ERROR is offline on that broker
until it registers again; one answered NONE is online again. A replica newly offline leaves the ISR,
and the partitions it led get a leader among the online replicas of their ISR (or stay offline); the
broker is told to stop it (StopReplica without delete), and every broker learns the new states.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from odradek.cluster.controller import election, requests
from odradek.cluster.controller.context import ControllerContext, PartitionState, TopicPartition
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.controller.unclean import unclean_allowed, warn_if_unclean
from odradek.cluster.zookeeper.log_dir_events import delete_log_dir_events, read_log_dir_events
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.leader_and_isr import LeaderAndIsrResponse

logger = logging.getLogger(__name__)


async def on_log_dir_event_notification(term: ControllerTerm) -> None:
    """Read the notifications, ask their brokers which replicas are online, delete what was read."""
    events = await asyncio.to_thread(read_log_dir_events, term.zk)
    try:
        broker_ids = sorted({broker_id for broker_id in events.values() if broker_id >= 0})
        if broker_ids:
            on_broker_log_dir_failure(term, broker_ids)
    finally:
        await asyncio.to_thread(delete_log_dir_events, term.fence, sorted(events))


def on_broker_log_dir_failure(term: ControllerTerm, broker_ids: list[int]) -> None:
    """LeaderAndIsr for every replica on those live brokers (their answers come back as events)."""
    context = term.context
    logger.info("Controller %d: handling a log dir failure of brokers %s", term.controller_id, broker_ids)
    for broker_id in broker_ids:
        if not context.is_live(broker_id):
            continue
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


async def on_leader_and_isr_response(
    term: ControllerTerm, broker_id: int, response: LeaderAndIsrResponse
) -> None:
    """Which of the broker's replicas are on a failed log dir now; those newly so go offline."""
    context = term.context
    if response.error_code != ErrorCode.NONE:
        logger.warning(
            "Controller %d: broker %d answered LeaderAndIsr with error %s",
            term.controller_id,
            broker_id,
            ErrorCode(response.error_code).name,
        )
        return
    offline: set[TopicPartition] = set()
    online: set[TopicPartition] = set()
    for tp, code in _partition_errors(term, response).items():
        if code == ErrorCode.KAFKA_STORAGE_ERROR:
            offline.add(tp)
        elif code == ErrorCode.NONE:
            online.add(tp)
    previous = context.replicas_on_offline_dirs.get(broker_id, set())
    current = (previous - online) | offline
    if current:
        context.replicas_on_offline_dirs[broker_id] = current
    else:
        context.replicas_on_offline_dirs.pop(broker_id, None)
    new = current - previous
    if new:
        logger.info(
            "Controller %d: replicas of %s on broker %d are offline (a failed log dir)",
            term.controller_id,
            sorted(new),
            broker_id,
        )
        await on_replicas_become_offline(term, broker_id, new)


async def on_replicas_become_offline(
    term: ControllerTerm, broker_id: int, replicas: set[TopicPartition]
) -> None:
    context = term.context
    affected = sorted(
        tp for tp in replicas if tp in context.states and tp.topic not in context.topics_being_deleted
    )
    changed: list[TopicPartition] = []
    for tp in affected:
        unclean = await unclean_allowed(term, tp, context.states[tp])
        decide = functools.partial(_without_offline_replica, term, broker_id, tp, unclean)
        if await term.update_state(tp, decide) is not None:
            changed.append(tp)
    if affected and context.is_live(broker_id):
        term.send(
            broker_id,
            requests.stop_replica(
                context, term.controller_id, broker_id, affected, delete=False, topic_deleted=False
            ),
        )
    term.send_leader_and_isr(changed, exclude={broker_id})
    # every broker learns the new leaders, and the offline replicas (UpdateMetadata's offline_replicas)
    term.send_update_metadata(context.live_broker_ids(), affected)


def _without_offline_replica(
    term: ControllerTerm, broker_id: int, tp: TopicPartition, unclean: bool, state: PartitionState
) -> PartitionStateZnode | None:
    decided = leader_and_isr_without_offline_replica(term.context, broker_id, tp, state, unclean)
    if decided is None:
        return None
    leader, isr, elected = decided
    znode = state.znode
    if elected:
        warn_if_unclean(term, tp, znode.isr, leader, "unclean.leader.election.enable")
        return term.offline_state(znode, leader, isr)
    return term.next_state(znode, leader, isr)


def leader_and_isr_without_offline_replica(
    context: ControllerContext, broker_id: int, tp: TopicPartition, state: PartitionState, unclean: bool
) -> tuple[int, list[int], bool] | None:
    """The partition's leader and ISR once `broker_id`'s replica is offline, and whether a leader was
    elected; None to leave the state as it is."""
    znode = state.znode
    if znode.leader == broker_id or not context.is_live(znode.leader):
        # OfflinePartition → OnlinePartition: a leader among the ISR's online replicas
        elected = election.offline_partition_leader(
            context.replicas(tp), znode.isr, context.eligible_for(tp), unclean
        )
        if elected is not None:
            return elected.leader, elected.isr, True
    # OfflineReplica: out of the ISR (never its last member), leaderless if it still led
    leader, isr = election.isr_without_replica(znode.leader, znode.isr, broker_id)
    if (leader, isr) == (znode.leader, list(znode.isr)):
        return None
    return leader, isr, False


def _partition_errors(term: ControllerTerm, response: LeaderAndIsrResponse) -> dict[TopicPartition, int]:
    """Each partition's error code, by name (v5+ answers name topics by id)."""
    errors: dict[TopicPartition, int] = {
        TopicPartition(p.topic_name, p.partition_index): p.error_code for p in response.partition_errors
    }
    names = {topic_id: name for name, topic_id in term.context.topic_ids.items()}
    for topic in response.topics:
        name = names.get(topic.topic_id)
        if name is None:
            continue
        for p in topic.partition_errors:
            errors[TopicPartition(name, p.partition_index)] = p.error_code
    return errors
