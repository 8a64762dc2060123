"""AlterPartition on the controller: a leader's ISR change (KafkaController.processAlterPartition).

The leader that sends it must be the broker the controller knows, at the epoch it registered with
(else STALE_BROKER_EPOCH for the whole request). Each partition is then checked against the
controller's context, in Kafka's order: unknown partition; a leader or partition epoch newer than
the controller's (this controller is probably stale: NOT_CONTROLLER, the leader looks for the new
one); an older leader epoch (FENCED_LEADER_EPOCH); a sender that does not lead it
(NOT_LEADER_OR_FOLLOWER); a request that repeats the current state is answered with it, before the
partition epoch is looked at, so that a retried request is idempotent; another partition epoch
(INVALID_UPDATE_VERSION); a RECOVERING leader (KIP-704) with others in its ISR, or a recovered one
going back to RECOVERING (INVALID_REQUEST); an ISR that is empty, repeats a member or lacks the leader
(INVALID_REQUEST); members outside the assignment, not live, shutting down or registered with
another epoch (INELIGIBLE_REPLICA, KIP-841). What passes is written with a compare-and-set on the
state znode's version, fenced by the controller epoch; an ISR-only change keeps the leader epoch.
Every live broker then gets UpdateMetadata for the partitions changed.

Beyond Kafka: the sender's registration is read from ZooKeeper too (STALE_BROKER_EPOCH when it
registered again since the controller saw it), and the write checks that no member registered again
since the controller saw it (registrations.py): it restarted, maybe without its unflushed tail, and
its bounce waits on the controller's queue. Written, the state would be newer than the new
registration, and the next controller's check of restarts no controller saw (broker_changes.py) would
keep the restarted broker in the ISR. The controller handles the bounce at once and decides again on
what it now knows (a partition the bounce changed: INVALID_UPDATE_VERSION; a member's broker epoch no
longer its registration's: INELIGIBLE_REPLICA); a change it could not settle so (the bounce not
handled) is INELIGIBLE_REPLICA, with nothing written.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from odradek.cluster.controller import reassignment
from odradek.cluster.controller.context import ControllerContext, PartitionState, TopicPartition
from odradek.cluster.controller.isr_changes import (
    UNKNOWN_BROKER_EPOCH,
    AlterPartitionResult,
    IsrChangeOutcome,
    IsrChangeRequest,
)
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.zookeeper.topic_znodes import RECOVERED, PartitionStateZnode
from odradek.protocol.error_codes import ErrorCode

logger = logging.getLogger(__name__)


async def on_alter_partition(
    term: ControllerTerm, broker_id: int, broker_epoch: int, changes: Sequence[IsrChangeRequest]
) -> AlterPartitionResult:
    """Check every change, write those that pass, tell every live broker."""
    context = term.context
    known = context.live_brokers.get(broker_id)
    registrations = term.registrations
    await registrations.read_version()
    if known is None or known.epoch != broker_epoch or await registrations.epoch(broker_id) != broker_epoch:
        logger.info(
            "Controller %d ignores AlterPartition from broker %d at epoch %d (known epoch %s)",
            term.controller_id,
            broker_id,
            broker_epoch,
            None if known is None else known.epoch,
        )
        return AlterPartitionResult(ErrorCode.STALE_BROKER_EPOCH, [])
    outcomes: list[IsrChangeOutcome] = []
    changed: list[TopicPartition] = []
    accepted: list[TopicPartition] = []
    for change in changes:
        outcome, tp, written = await _apply(term, broker_id, change)
        outcomes.append(outcome)
        if tp is not None and outcome.error == ErrorCode.NONE:
            accepted.append(tp)
            if written:
                changed.append(tp)
    if changed:
        term.send_update_metadata(context.live_broker_ids(), changed)
    # as Kafka's processAlterPartition: any successful answer may complete a reassignment
    for tp in accepted:
        await reassignment.on_isr_change(term, tp.topic, tp.partition)
    return AlterPartitionResult(ErrorCode.NONE, outcomes)


async def _apply(
    term: ControllerTerm, broker_id: int, change: IsrChangeRequest
) -> tuple[IsrChangeOutcome, TopicPartition | None, bool]:
    """The outcome for one partition, the partition (when known), and whether its znode was written."""
    context = term.context
    topic = change.topic if change.topic is not None else _topic_named(context, change.topic_id)
    if topic is None:
        return IsrChangeOutcome(ErrorCode.UNKNOWN_TOPIC_ID), None, False
    tp = TopicPartition(topic, change.partition)
    if tp not in context.states or topic in context.topics_being_deleted:
        return IsrChangeOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None, False
    expected = change.partition_epoch
    checked = context.states[tp]
    refused: ErrorCode | None = None

    def decide(current: PartitionState) -> PartitionStateZnode | None:
        nonlocal refused
        if current is not checked and current.partition_epoch != expected:
            # Read again (another writer won the compare-and-set) or changed by a broker change
            # handled meanwhile: the proposal is out of date. (The state first checked may differ
            # from `expected`: a retry repeating the current state is answered with it.)
            refused = ErrorCode.INVALID_UPDATE_VERSION
            return None
        # checked again after a broker change handled meanwhile (term.update_state)
        refused = check_change(context, tp, current, broker_id, change)
        if refused is not None:
            return None
        znode = current.znode
        return PartitionStateZnode(
            znode.leader,
            znode.leader_epoch,
            list(change.new_isr),
            context.epoch,
            change.leader_recovery_state,
        )

    written = await term.update_state(tp, decide)
    if written is None:
        if refused == ErrorCode.NONE:  # the state asked for is the current one
            return IsrChangeOutcome(ErrorCode.NONE, context.states[tp]), tp, False
        # None: not written because a member registered again (term.update_state)
        error = ErrorCode.INELIGIBLE_REPLICA if refused is None else refused
        logger.info(
            "Controller %d refuses broker %d's ISR %s for %s-%d: %s",
            term.controller_id,
            broker_id,
            list(change.new_isr),
            tp.topic,
            tp.partition,
            error.name,
        )
        return IsrChangeOutcome(error), tp, False
    logger.info(
        "Controller %d: ISR of %s-%d is now %s (partition epoch %d)",
        term.controller_id,
        tp.topic,
        tp.partition,
        list(written.isr),
        written.partition_epoch,
    )
    return IsrChangeOutcome(ErrorCode.NONE, written), tp, True


def check_change(
    context: ControllerContext,
    tp: TopicPartition,
    state: PartitionState,
    broker_id: int,
    change: IsrChangeRequest,
) -> ErrorCode | None:
    """None when the change may be written; NONE when it asks for the current state (answered as it
    is); otherwise the partition's error."""
    current = state.znode
    if change.leader_epoch > current.leader_epoch or change.partition_epoch > state.partition_epoch:
        return ErrorCode.NOT_CONTROLLER
    if change.leader_epoch < current.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current.leader != broker_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if (
        list(change.new_isr) == list(current.isr)
        and change.leader_recovery_state == current.leader_recovery_state
    ):
        return ErrorCode.NONE
    if change.partition_epoch != state.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    isr = change.new_isr
    if change.leader_recovery_state != RECOVERED and (
        len(isr) > 1 or current.leader_recovery_state == RECOVERED
    ):
        # KIP-704: a recovering leader stays alone in its ISR, and a recovered one never goes back
        return ErrorCode.INVALID_REQUEST
    if not isr or broker_id not in isr or len(set(isr)) != len(isr):
        return ErrorCode.INVALID_REQUEST
    replicas = context.replicas(tp)
    for member, epoch in zip(isr, change.member_epochs, strict=True):
        if member not in replicas:
            return ErrorCode.INELIGIBLE_REPLICA
        if member == broker_id:
            continue  # the leader itself: checked above (it may be shutting down with nowhere to go)
        live = context.live_brokers.get(member)
        if live is None or member in context.shutting_down:
            return ErrorCode.INELIGIBLE_REPLICA
        if epoch != UNKNOWN_BROKER_EPOCH and epoch != live.epoch:
            return ErrorCode.INELIGIBLE_REPLICA
    return None


def _topic_named(context: ControllerContext, topic_id: uuid.UUID | None) -> str | None:
    if topic_id is None:
        return None
    return next((name for name, known in context.topic_ids.items() if known == topic_id), None)
