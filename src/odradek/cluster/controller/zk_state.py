"""The controller's reads of ZooKeeper, into its context (blocking: run through asyncio.to_thread)."""

from __future__ import annotations

import logging

from odradek.cluster.controller.context import ControllerContext, LiveBroker, PartitionState, TopicPartition
from odradek.cluster.zookeeper import brokers, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode

logger = logging.getLogger(__name__)


def read_live_brokers(zk: ZooKeeperClient) -> dict[int, LiveBroker]:
    """Every registered broker with its epoch (one that goes while being read is left out)."""
    live = {}
    for broker_id in brokers.live_broker_ids(zk):
        found = brokers.broker_registration(zk, broker_id)
        if found is not None:
            live[broker_id] = LiveBroker(*found)
    return live


def read_topic(zk: ZooKeeperClient, topic: str) -> TopicAssignmentZnode | None:
    found = topics.topic_assignment(zk, topic)
    return None if found is None else found[0]


def read_partition_state(zk: ZooKeeperClient, tp: TopicPartition) -> PartitionState | None:
    found = topics.partition_state(zk, tp.topic, tp.partition)
    return None if found is None else PartitionState(*found)


def add_topic(
    zk: ZooKeeperClient, context: ControllerContext, topic: str, assignment: TopicAssignmentZnode
) -> None:
    """Put a topic's assignment, id and existing partition states into the context."""
    context.assignments[topic] = {p: list(r) for p, r in assignment.partitions.items()}
    if assignment.topic_id is not None:
        context.topic_ids[topic] = assignment.topic_id
    for partition in assignment.partitions:
        tp = TopicPartition(topic, partition)
        state = read_partition_state(zk, tp)
        if state is not None:
            context.states[tp] = state


def load_context(zk: ZooKeeperClient, epoch: int, epoch_zk_version: int) -> ControllerContext:
    """KafkaController.initializeControllerContext: brokers, topics, assignments, partition states, and
    the topics marked for deletion."""
    context = ControllerContext(epoch, epoch_zk_version)
    context.live_brokers = read_live_brokers(zk)
    for topic in topics.topic_names(zk):
        assignment = read_topic(zk, topic)
        if assignment is not None:
            add_topic(zk, context, topic, assignment)
    logger.info(
        "Controller context loaded: epoch %d, live brokers %s, %d topics, %d partition states",
        epoch,
        sorted(context.live_brokers),
        len(context.assignments),
        len(context.states),
    )
    return context
