"""The controller's reads of ZooKeeper, into its context (blocking: run through asyncio.to_thread)."""

from __future__ import annotations

import logging

from odradek.cluster.controller.context import ControllerContext, LiveBroker, PartitionState, TopicPartition
from odradek.cluster.controller.replica_assignment import ReplicaAssignment
from odradek.cluster.zookeeper import brokers, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError

logger = logging.getLogger(__name__)


def read_live_brokers(zk: ZooKeeperClient) -> dict[int, LiveBroker]:
    """Every registered broker with its epoch (one that goes while being read is left out, and so is a
    registration the controller cannot read: logged, it must not stop the controller)."""
    live = {}
    for broker_id in brokers.live_broker_ids(zk):
        try:
            found = brokers.broker_registration(zk, broker_id)
        except MalformedZnodeError as error:
            logger.warning("broker %d left out: its registration cannot be read: %s", broker_id, error)
            continue
        if found is not None:
            live[broker_id] = LiveBroker(*found)
    return live


def topic_assignment_znode(context: ControllerContext, topic: str) -> TopicAssignmentZnode:
    """/brokers/topics/<topic> as the context has it: replicas, and those being added and removed."""
    partitions = context.assignments.get(topic, {})
    moving = {p: context.reassigning.get(TopicPartition(topic, p)) for p in partitions}
    return TopicAssignmentZnode(
        partitions={p: list(r) for p, r in partitions.items()},
        topic_id=context.topic_ids.get(topic),
        adding_replicas={p: list(m.adding) for p, m in moving.items() if m is not None},
        removing_replicas={p: list(m.removing) for p, m in moving.items() if m is not None},
    )


def read_topic(zk: ZooKeeperClient, topic: str) -> TopicAssignmentZnode | None:
    """The topic's assignment, or None when it is gone, or cannot be read: as Kafka's TopicZNode.decode
    takes unparseable JSON for a topic without partitions, such a topic is logged and skipped rather
    than stopping the controller (which would keep /controller and control nothing)."""
    try:
        found = topics.topic_assignment(zk, topic)
    except MalformedZnodeError as error:
        logger.warning("topic %s skipped: its assignment cannot be read: %s", topic, error)
        return None
    return None if found is None else found[0]


def read_partition_state(zk: ZooKeeperClient, tp: TopicPartition) -> PartitionState | None:
    found = topics.partition_state_and_zxid(zk, tp.topic, tp.partition)
    return None if found is None else PartitionState(*found)


def add_topic(
    zk: ZooKeeperClient, context: ControllerContext, topic: str, assignment: TopicAssignmentZnode
) -> None:
    """Put a topic's assignment, id and existing partition states into the context."""
    context.assignments[topic] = {p: list(r) for p, r in assignment.partitions.items()}
    if assignment.topic_id is not None:
        context.topic_ids[topic] = assignment.topic_id
    for partition, replicas in assignment.partitions.items():
        tp = TopicPartition(topic, partition)
        # a reassignment a previous controller started: resumed once the context is loaded
        context.set_full_assignment(
            tp,
            ReplicaAssignment.of(
                replicas,
                assignment.adding_replicas.get(partition, ()),
                assignment.removing_replicas.get(partition, ()),
            ),
        )
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
        "Controller context loaded: epoch %d, live brokers %s, %d topics, %d partition states, "
        "%d partitions being reassigned",
        epoch,
        sorted(context.live_brokers),
        len(context.assignments),
        len(context.states),
        len(context.reassigning),
    )
    return context
