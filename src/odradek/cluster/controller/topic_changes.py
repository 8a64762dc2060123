"""Topics created, grown and deleted (KafkaController.processTopicChange,
processPartitionModifications; TopicDeletionManager)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kazoo.exceptions import NoNodeError

from odradek.cluster.controller import leader_elections, requests, zk_state
from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.zookeeper import paths, topics
from odradek.cluster.zookeeper.controller_fence import DeleteOp

logger = logging.getLogger(__name__)


async def on_topic_change(term: ControllerTerm) -> None:
    context = term.context
    names = set(await asyncio.to_thread(topics.topic_names, term.zk))
    for gone in sorted(set(context.assignments) - names):
        context.remove_topic(gone)
    new_partitions: list[TopicPartition] = []
    for topic in sorted(names - set(context.assignments)):
        assignment = await asyncio.to_thread(zk_state.read_topic, term.zk, topic)
        if assignment is None:
            continue
        await asyncio.to_thread(zk_state.add_topic, term.zk, context, topic, assignment)
        term.watch_topic(topic)
        new_partitions += [tp for tp in context.partitions_of(topic) if tp not in context.states]
        logger.info(
            "Controller %d: new topic %s with %d partitions",
            term.controller_id,
            topic,
            len(assignment.partitions),
        )
    await leader_elections.online_partitions(term, new_partitions)


async def on_partition_modifications(term: ControllerTerm, topic: str) -> None:
    context = term.context
    if topic not in context.assignments or topic in context.topics_being_deleted:
        return
    assignment = await asyncio.to_thread(zk_state.read_topic, term.zk, topic)
    if assignment is None:
        return
    known = context.assignments[topic]
    added = {p: list(r) for p, r in assignment.partitions.items() if p not in known}
    if not added:
        return
    known.update(added)
    logger.info("Controller %d: topic %s gets partitions %s", term.controller_id, topic, sorted(added))
    await leader_elections.online_partitions(term, [TopicPartition(topic, p) for p in sorted(added)])


async def on_topic_deletion(term: ControllerTerm) -> None:
    context = term.context
    fence = term.fence
    for topic in await asyncio.to_thread(topics.topics_marked_for_deletion, term.zk):
        if topic not in context.assignments:
            # TopicDeletionManager: a marker for a topic that does not exist is just removed
            # (gone already: another controller did it; ControllerMovedError goes up: we resign)
            with contextlib.suppress(NoNodeError):
                await asyncio.to_thread(fence.commit, [DeleteOp(paths.delete_topic_marker(topic))])
            continue
        await delete_topic(term, topic)


async def delete_topic(term: ControllerTerm, topic: str) -> None:
    """TopicDeletionManager.onTopicDeletion: brokers forget the topic (UpdateMetadata with leader -2),
    every live replica deletes its copy (StopReplica delete=true, leader epoch -2), then its znodes
    and the marker go (the marker last, so that a controller failing half-way is finished by the next).

    A replica on a broker that is down could not delete its copy: as Kafka (a topic "ineligible for
    deletion"), the znodes stay, with the marker, until that broker is back (on_broker_startup tries
    again); meanwhile no leader is elected for the topic."""
    context = term.context
    moving = sorted(tp.partition for tp in context.reassigning if tp.topic == topic)
    if moving and topic not in context.topics_being_deleted:
        # as Kafka's TopicDeletionManager: ineligible while a reassignment is in progress; the
        # marker stays, and the deletion starts once the last one completes (or is cancelled)
        logger.info(
            "Controller %d: deletion of topic %s waits for the reassignment of partitions %s",
            term.controller_id,
            topic,
            moving,
        )
        return
    context.topics_being_deleted.add(topic)
    partitions = context.partitions_of(topic)
    topic_id = context.topic_ids.get(topic, requests.NO_TOPIC_ID)
    for broker_id in sorted(context.live_brokers):
        term.send(
            broker_id,
            requests.update_metadata(context, term.controller_id, broker_id, partitions, {topic: topic_id}),
        )
    by_broker: dict[int, list[TopicPartition]] = {}
    for tp in partitions:
        for replica in context.replicas(tp):
            if context.is_live(replica):
                by_broker.setdefault(replica, []).append(tp)
    for broker_id, theirs in sorted(by_broker.items()):
        term.send(
            broker_id, requests.stop_replica(context, term.controller_id, broker_id, theirs, delete=True)
        )
    offline = sorted({r for tp in partitions for r in context.replicas(tp) if not context.is_live(r)})
    if offline:
        logger.info(
            "Controller %d: deletion of topic %s waits for its replicas on brokers %s",
            term.controller_id,
            topic,
            offline,
        )
        return
    await asyncio.to_thread(topics.delete_topic_znodes, term.fence, topic)
    context.remove_topic(topic)
    term.unwatch_topic(topic)
    logger.info("Controller %d deleted topic %s", term.controller_id, topic)
