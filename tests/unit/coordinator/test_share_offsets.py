"""A share group's start offsets through the group coordinator: describe, alter (reset) and delete,
kept by the share coordinator (the SharePersister) and recorded in the group."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from pathlib import Path

import pytest

from odradek.coordinator.share_offsets import PartitionOffset, ShareOffsets
from odradek.partition.end_offsets import EndOffset
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.partition import TopicPartition
from tests.support.share_persister import InMemorySharePersister
from tests.unit.coordinator.harness import Harness
from tests.unit.coordinator.test_share_group import beat, run, share_group


def offsets_of(h: Harness) -> ShareOffsets:
    offsets = h.coordinator.share.offsets
    assert offsets is not None
    return offsets


def test_the_start_offsets_of_a_share_group_are_described(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        await persister.write(SharePartitionKey("sg", t, 1), 1, 0, 42, ())
        [topic] = await offsets_of(h).describe("sg", None)
        assert (topic.name, topic.topic_id) == ("t", t)
        assert [(p.partition, p.start_offset) for p in topic.partitions] == [(0, -1), (1, 42), (2, -1)]
        [unknown] = await offsets_of(h).describe("sg", {"nope": [0]})
        assert unknown.partitions == [PartitionOffset(0, -1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
        with pytest.raises(KafkaError) as missing:
            await offsets_of(h).describe("other", None)
        assert missing.value.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    run(tmp_path, scenario)


def test_altering_a_share_groups_offsets_needs_an_empty_group_and_restarts_the_state(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        with pytest.raises(KafkaError) as busy:
            await offsets_of(h).alter("sg", {"t": {0: 5}})
        assert busy.value.error_code == ErrorCode.NON_EMPTY_GROUP
        await beat(h, "a", -1)
        before = persister.states[SharePartitionKey("sg", t, 0)].state_epoch
        [topic] = await offsets_of(h).alter("sg", {"t": {0: 5, 9: 1}})
        assert [(p.partition, p.error) for p in topic.partitions] == [
            (0, ErrorCode.NONE),
            (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        state = persister.states[SharePartitionKey("sg", t, 0)]
        assert (state.start_offset, state.state_epoch) == (5, before + 1)  # a higher epoch fences leaders

    run(tmp_path, scenario)


def test_deleting_a_share_groups_offsets_forgets_the_state_and_the_group_reinitializes(
    tmp_path: Path,
) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        await beat(h, "a", -1)
        [topic] = await offsets_of(h).delete("sg", ["t"])
        assert topic.error == ErrorCode.NONE
        assert persister.states == {}
        assert share_group(h).initialized == {}
        [again] = await offsets_of(h).delete("sg", ["t"])
        assert again.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        await beat(h, "b", 0)  # a new member: the state is initialised again
        assert len(persister.states) == 3

    run(tmp_path, scenario)


class FixedEndOffsets:
    """The partitions' end offsets, as their leaders would answer; every call recorded."""

    def __init__(self, offsets: dict[TopicPartition, EndOffset]) -> None:
        self.offsets = offsets
        self.asked: list[set[TopicPartition]] = []

    async def latest_offsets(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, EndOffset]:
        self.asked.append(set(partitions))
        missing = EndOffset(-1, ErrorCode.LEADER_NOT_AVAILABLE)
        return {tp: self.offsets.get(tp, missing) for tp in partitions}


def test_a_share_partitions_lag_is_its_end_less_its_start_offset_and_the_records_delivered(
    tmp_path: Path,
) -> None:
    # KIP-1226 (DescribeShareGroupOffsets v1), as Kafka 4.4's group coordinator tells it
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        await persister.write(SharePartitionKey("sg", t, 1), 1, 0, 10, (), delivery_complete_count=3)
        await persister.write(SharePartitionKey("sg", t, 2), 1, 0, 5, (), delivery_complete_count=0)
        ends = FixedEndOffsets({TopicPartition("t", 1): EndOffset(20)})
        offsets = ShareOffsets(h.coordinator.runtime, h.cluster, persister, ends)
        [topic] = await offsets.describe("sg", None)
        assert [(p.partition, p.start_offset, p.lag, p.error) for p in topic.partitions] == [
            (0, -1, -1, ErrorCode.NONE),  # no start offset yet: no lag
            (1, 10, 7, ErrorCode.NONE),
            (2, 0, -1, ErrorCode.LEADER_NOT_AVAILABLE),  # its leader could not tell its end
        ]
        assert ends.asked == [{TopicPartition("t", 1), TopicPartition("t", 2)}]  # one call, as Kafka
        await persister.write(SharePartitionKey("sg", t, 1), 1, 0, 10, (), delivery_complete_count=-1)
        [topic] = await offsets.describe("sg", {"t": [1]})
        assert [(p.start_offset, p.lag) for p in topic.partitions] == [(10, -1)]  # the count unknown

    run(tmp_path, scenario)
