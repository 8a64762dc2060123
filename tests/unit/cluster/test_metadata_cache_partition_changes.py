"""The metadata cache takes one partition's change (a LeaderAndIsr applied, an ISR change committed)
without walking the topic's other partitions. It rebuilt the whole topic for each: a LeaderAndIsr of
3,333 partitions of a 10,000-partition topic held the event loop for seconds (1.8 ms a partition)."""

from __future__ import annotations

import uuid

from odradek.cluster.metadata import ClusterMetadata, PartitionState
from odradek.cluster.metadata_update import apply_partition_changes

TOPIC = "scale"
TOPIC_ID = uuid.UUID(int=7)
PARTITIONS = 50


class WalkedPartitions(list[PartitionState]):
    """A topic's partitions that count the walks over them."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        WalkedPartitions.walks += 1
        return super().__iter__()


def _state(index: int, leader: int, epoch: int) -> PartitionState:
    return PartitionState(
        partition=index, leader_id=leader, leader_epoch=epoch, replicas=[1, 2, 3], isr=[1, 2, 3]
    )


def _cache() -> ClusterMetadata:
    cache = ClusterMetadata("cluster", 1, [])
    apply_partition_changes(cache, TOPIC, {i: _state(i, 1, 0) for i in range(PARTITIONS)}, TOPIC_ID)
    topic = cache.topic(TOPIC)
    assert topic is not None
    topic.partitions = WalkedPartitions(topic.partitions)
    WalkedPartitions.walks = 0
    return cache


def test_one_partitions_change_does_not_walk_the_topics_other_partitions() -> None:
    cache = _cache()
    for index in range(PARTITIONS):
        apply_partition_changes(cache, TOPIC, {index: _state(index, 2, 1)}, TOPIC_ID)
    assert WalkedPartitions.walks == 0
    topic = cache.topic(TOPIC)
    assert topic is not None and topic.topic_id == TOPIC_ID
    assert [(p.partition, p.leader_id, p.leader_epoch) for p in topic.partitions] == [
        (i, 2, 1) for i in range(PARTITIONS)
    ]


def test_a_topic_grows_loses_partitions_and_is_recreated_as_before() -> None:
    cache = _cache()
    apply_partition_changes(cache, TOPIC, {PARTITIONS + 1: _state(PARTITIONS + 1, 3, 0)}, TOPIC_ID)
    topic = cache.topic(TOPIC)
    assert topic is not None and len(topic.partitions) == PARTITIONS + 2
    assert topic.partitions[PARTITIONS].leader_id == -1  # not heard of yet: offline
    apply_partition_changes(cache, TOPIC, {3: None}, TOPIC_ID)
    topic = cache.topic(TOPIC)
    assert topic is not None and topic.partitions[3].leader_id == -1 and cache.partition(TOPIC, 3) is not None
    apply_partition_changes(cache, TOPIC, {0: _state(0, 2, 0)}, uuid.UUID(int=8))
    recreated = cache.topic(TOPIC)
    assert recreated is not None and recreated.topic_id == uuid.UUID(int=8)
    assert cache.topic_by_id(TOPIC_ID) is None and recreated.partitions[0].leader_id == 2
