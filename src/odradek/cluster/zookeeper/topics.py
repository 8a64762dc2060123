"""Topic assignments, partition states and delete-topic markers, as Kafka 3.9's KafkaZkClient keeps them.

Who writes what: the broker handling CreateTopics writes the config and the assignment
(/config/topics/<topic>, /brokers/topics/<topic>), the one handling DeleteTopics the marker
(/admin/delete_topics/<topic>); everything else is the controller's and goes through its
ControllerFence. Partition states are compare-and-set on their zkVersion (the partition epoch): a
write based on a stale read loses (None), and the controller reads again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import cast

from kazoo.exceptions import BadVersionError, NodeExistsError
from kazoo.protocol.states import ZnodeStat

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import set_entity_config
from odradek.cluster.zookeeper.controller_fence import CheckOp, ControllerFence, CreateOp, DeleteOp, SetDataOp
from odradek.cluster.zookeeper.errors import TopicAlreadyExistsError, TopicAlreadyMarkedForDeletionError
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode


def create_topic(
    zk: ZooKeeperClient, topic: str, assignment: TopicAssignmentZnode, config: Mapping[str, str]
) -> None:
    """CreateTopics on any broker, as Kafka's AdminZkClient.createTopicWithAssignment: the topic's
    config first (always written, {} included; no change notification), then its assignment."""
    if zk.read(paths.topic(topic)) is not None:
        raise TopicAlreadyExistsError(f"Topic '{topic}' already exists ({paths.topic(topic)})")
    set_entity_config(zk, paths.TOPIC_CONFIG, topic, config)
    create_topic_assignment(zk, topic, assignment)


def create_topic_assignment(zk: ZooKeeperClient, topic: str, assignment: TopicAssignmentZnode) -> None:
    """Write a new topic's replica assignment (the controller then creates its partitions' states)."""
    try:
        zk.create_persistent_path(paths.topic(topic), assignment.serialize(), exist_ok=False)
    except NodeExistsError:
        raise TopicAlreadyExistsError(f"Topic '{topic}' already exists ({paths.topic(topic)})") from None


def topic_assignment(zk: ZooKeeperClient, topic: str) -> tuple[TopicAssignmentZnode, int] | None:
    """A topic's assignment and the zkVersion of its znode, or None when the topic does not exist."""
    found = zk.read(paths.topic(topic))
    if found is None:
        return None
    data, stat = found
    return TopicAssignmentZnode.parse(topic, data), int(stat.version)


def set_topic_assignment(
    fence: ControllerFence, topic: str, assignment: TopicAssignmentZnode, expected_version: int
) -> int:
    """Replace a topic's assignment (reassignment, new partitions) if its zkVersion is still
    `expected_version`; returns the new one. BadVersionError when it changed meanwhile."""
    (stat,) = fence.commit([SetDataOp(paths.topic(topic), assignment.serialize(), expected_version)])
    return int(cast(ZnodeStat, stat).version)


def topic_names(zk: ZooKeeperClient) -> list[str]:
    return zk.children(paths.TOPICS)


def create_partition_states(
    fence: ControllerFence, topic: str, states: Mapping[int, PartitionStateZnode]
) -> None:
    """Create the state znodes of a topic's new partitions (their partition epoch starts at 0).
    NodeExistsError when one exists already: nothing of that partition is written."""
    # .../partitions exists already when partitions are added to a topic
    with contextlib.suppress(NodeExistsError):
        fence.commit([CreateOp(paths.topic_partitions(topic))])
    for partition, state in sorted(states.items()):
        fence.commit(
            [
                CreateOp(paths.topic_partition(topic, partition)),
                CreateOp(paths.partition_state(topic, partition), state.serialize()),
            ]
        )


def partition_state(
    zk: ZooKeeperClient, topic: str, partition: int
) -> tuple[PartitionStateZnode, int] | None:
    """A partition's state and partition epoch (its znode's zkVersion), or None if it has none."""
    found = partition_state_and_zxid(zk, topic, partition)
    return None if found is None else found[:2]


def partition_state_and_zxid(
    zk: ZooKeeperClient, topic: str, partition: int
) -> tuple[PartitionStateZnode, int, int] | None:
    """A partition's state, partition epoch and the zxid of the write that made it (its mzxid: a
    broker whose registration is newer has restarted since the state was decided), or None."""
    found = zk.read(paths.partition_state(topic, partition))
    if found is None:
        return None
    data, stat = found
    return PartitionStateZnode.parse(topic, partition, data), int(stat.version), int(stat.mzxid)


def update_partition_state(
    fence: ControllerFence,
    topic: str,
    partition: int,
    state: PartitionStateZnode,
    partition_epoch: int,
    registrations_version: int,
) -> int | None:
    """Compare-and-set: write `state` if the partition epoch is still `partition_epoch`, and no broker
    registered since /brokers/ids was at `registrations_version` (else ZnodeVersionMovedError, see
    brokers.py); returns the new partition epoch, or None when the state changed meanwhile (re-read
    and decide again)."""
    try:
        _, stat = fence.commit(
            [
                CheckOp(paths.BROKER_IDS, registrations_version),
                SetDataOp(paths.partition_state(topic, partition), state.serialize(), partition_epoch),
            ]
        )
    except BadVersionError:
        return None
    return int(cast(ZnodeStat, stat).version)


def mark_topic_for_deletion(zk: ZooKeeperClient, topic: str) -> None:
    """DeleteTopics: leave /admin/delete_topics/<topic> for the controller to act on."""
    try:
        zk.create_persistent_path(paths.delete_topic_marker(topic), exist_ok=False)
    except NodeExistsError:
        raise TopicAlreadyMarkedForDeletionError(f"Topic '{topic}' is already marked for deletion") from None


def topics_marked_for_deletion(zk: ZooKeeperClient) -> list[str]:
    return zk.children(paths.DELETE_TOPICS)


def delete_topic_znodes(fence: ControllerFence, topic: str) -> None:
    """The controller's last step of a deletion: the topic's znodes, its config, then its marker (in
    Kafka's order: a controller that stops half-way leaves the marker, and the next one finishes)."""
    for root in (paths.topic(topic), paths.config_entity(paths.TOPIC_CONFIG, topic)):
        for path in _depth_first(fence.zk, root):
            fence.commit([DeleteOp(path)])
    for path in _depth_first(fence.zk, paths.delete_topic_marker(topic)):
        fence.commit([DeleteOp(path)])


def _depth_first(zk: ZooKeeperClient, root: str) -> list[str]:
    """`root` and every znode below it, children before parents ([] when `root` does not exist)."""
    if zk.read(root) is None:
        return []
    found = []
    for child in zk.children(root):
        found += _depth_first(zk, f"{root}/{child}")
    return [*found, root]
