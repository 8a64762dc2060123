"""UpdateMetadata applied to the metadata cache (ZooKeeper mode), as Kafka's ZkMetadataCache does.

The controller sends the live brokers whole, but partitions only when they change (a partial update):
each partition listed overwrites the cached one, a partition whose leader is LEADER_DURING_DELETE leaves
the cache, and a topic leaves with its last partition. The epoch fencing is the replica manager's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from odradek.cluster.control_requests import LEADER_DURING_DELETE, PartitionLeadership
from odradek.cluster.metadata import ClusterMetadata, LiveBroker, PartitionState, TopicState
from odradek.cluster.topic_checks import INTERNAL_TOPICS

NO_TOPIC_ID = uuid.UUID(int=0)


def apply_update_metadata(
    cache: ClusterMetadata,
    controller_id: int,
    live_brokers: list[LiveBroker],
    partitions: Iterable[PartitionLeadership],
) -> list[tuple[str, int]]:
    """Update `cache` from one UpdateMetadata; returns the (topic, partition)s it deleted."""
    cache.controller_id = controller_id
    cache.set_live_brokers(live_brokers)
    changed: dict[str, dict[int, PartitionState | None]] = {}
    topic_ids: dict[str, uuid.UUID | None] = {}
    for state in partitions:
        if state.topic_id is not None:
            topic_ids[state.topic] = state.topic_id
        if state.leader == LEADER_DURING_DELETE:
            changed.setdefault(state.topic, {})[state.partition] = None
        else:
            changed.setdefault(state.topic, {})[state.partition] = _partition_state(state)
    deleted: list[tuple[str, int]] = []
    for topic, updates in changed.items():
        deleted.extend((topic, index) for index, state in updates.items() if state is None)
        apply_partition_changes(cache, topic, updates, topic_ids.get(topic))
    cache.first_update.set()
    return deleted


def apply_partition_changes(
    cache: ClusterMetadata,
    topic: str,
    updates: dict[int, PartitionState | None],
    topic_id: uuid.UUID | None = None,
) -> None:
    """Overwrite (or with None, remove) some partitions of `topic` in the cache."""
    current = cache.topic(topic)
    if current is not None and _in_place(current, updates, topic_id):
        # The common case (a LeaderAndIsr applied, an ISR change committed): one partition at a time,
        # and rebuilding a topic of 10,000 partitions for each held the event loop for seconds.
        for index, state in updates.items():
            if state is not None:  # always, as _in_place checked
                current.partitions[index] = state
        return
    partitions = {p.partition: p for p in current.partitions} if current is not None else {}
    for index, state in updates.items():
        if state is None:
            partitions.pop(index, None)
        else:
            partitions[index] = state
    if not partitions:
        cache.remove_topic(topic)
        return
    if topic_id is None or topic_id == NO_TOPIC_ID:
        topic_id = current.topic_id if current is not None else NO_TOPIC_ID
    # The cache indexes a topic's partitions by position. The controller always sends a topic's
    # partitions together when it creates them, so a gap means one not heard of yet: offline.
    dense = [partitions.get(i) or _unknown(i) for i in range(max(partitions) + 1)]
    if current is not None and current.topic_id == topic_id:
        current.partitions = dense
        return
    if current is not None:
        cache.remove_topic(topic)  # recreated under the same name with a new id
    created = TopicState(topic, topic_id, dense, is_internal=topic in INTERNAL_TOPICS)
    cache.add_topic(created, by_id=topic_id != NO_TOPIC_ID)


def _in_place(
    current: TopicState, updates: dict[int, PartitionState | None], topic_id: uuid.UUID | None
) -> bool:
    """Whether `updates` only overwrite partitions the cached topic has, under its id."""
    same_topic = topic_id is None or topic_id == NO_TOPIC_ID or topic_id == current.topic_id
    count = len(current.partitions)
    return same_topic and all(state is not None and 0 <= index < count for index, state in updates.items())


def follow_leadership(cache: ClusterMetadata, state: PartitionLeadership) -> None:
    """The cache follows a leadership the replica manager applied, so Metadata and the data path
    agree with it before the controller's UpdateMetadata arrives; never backwards."""
    cached = cache.partition(state.topic, state.partition)
    if cached is not None and cached.leader_epoch >= state.leader_epoch:
        return
    update = PartitionState(
        partition=state.partition,
        leader_id=state.leader,
        leader_epoch=state.leader_epoch,
        replicas=list(state.replicas),
        isr=list(state.isr),
        offline_replicas=list(cached.offline_replicas) if cached is not None else [],
    )
    apply_partition_changes(cache, state.topic, {state.partition: update}, state.topic_id)


def _partition_state(state: PartitionLeadership) -> PartitionState:
    return PartitionState(
        partition=state.partition,
        leader_id=state.leader,
        leader_epoch=state.leader_epoch,
        replicas=list(state.replicas),
        isr=list(state.isr),
        offline_replicas=list(state.offline_replicas),
    )


def _unknown(index: int) -> PartitionState:
    return PartitionState(partition=index, leader_id=-1, leader_epoch=-1, replicas=[], isr=[])
