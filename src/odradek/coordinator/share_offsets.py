"""A share group's start offsets, as the admin APIs see them: DescribeShareGroupOffsets,
AlterShareGroupOffsets and DeleteShareGroupOffsets (kafka-share-groups.sh --describe, --reset-offsets,
--delete-offsets).

The offsets are the share coordinators' (`SharePersister.read_summary`, `.initialize`, `.delete`); the
group coordinator keeps which partitions have state (ShareGroupStatePartitionMetadata). A partition's
lag (KIP-1226) is its end offset, asked of its leader (`PartitionEndOffsets`), less its start offset and
the records past it already delivered for good (the share coordinator's delivery-complete count); -1
while either is unknown, as Kafka 4.4 tells it. Altering or
deleting needs an empty group (NON_EMPTY_GROUP otherwise), as in Kafka: an altered partition's state
is started again at a higher state epoch, which fences what its leader still holds.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from odradek.coordinator.group_runtime import GroupRuntime
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.shard import GroupShard
from odradek.coordinator.share_group import ShareGroup
from odradek.coordinator.share_members import TopicsMetadata
from odradek.partition.end_offsets import PartitionEndOffsets
from odradek.partition.share.persister import (
    SharePartitionKey,
    SharePersister,
    ShareStateError,
    ShareStateSummary,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.partition import TopicPartition

#: The leader epoch a summary is read with: the admin path fences no leader.
ANY_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    partition: int
    start_offset: int
    leader_epoch: int
    error: ErrorCode = ErrorCode.NONE
    #: Records from the start offset to the partition's end not yet delivered for good; -1: unknown.
    lag: int = -1


@dataclass(frozen=True, slots=True)
class TopicOffsets:
    name: str
    topic_id: uuid.UUID
    partitions: list[PartitionOffset]
    error: ErrorCode = ErrorCode.NONE


class ShareOffsets:
    def __init__(
        self,
        runtime: GroupRuntime,
        topics: TopicsMetadata,
        persister: SharePersister,
        end_offsets: PartitionEndOffsets | None = None,
    ) -> None:
        self.runtime = runtime
        self.topics = topics
        self.persister = persister
        #: Where the partitions' end offsets come from; without it no lag is told.
        self.end_offsets = end_offsets

    async def describe(self, group_id: str, wanted: dict[str, list[int]] | None) -> list[TopicOffsets]:
        """The start offset of each partition asked for (every initialised one when `wanted` is None);
        -1 for a partition whose state was never initialised. Raises KafkaError for the group."""
        group = self._group(group_id)
        if wanted is None:
            wanted = {name: sorted(partitions) for name, partitions in group.initialized.values()}
        summaries: dict[TopicPartition, ShareStateSummary] = {}
        answer = []
        for name, partitions in wanted.items():
            described = self.topics.topic(name)
            if described is None:
                missing = [
                    PartitionOffset(p, -1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in partitions
                ]
                answer.append(TopicOffsets(name, uuid.UUID(int=0), missing))
                continue
            initialized = group.initialized.get(described.topic_id, (name, frozenset()))[1]
            offsets = []
            for partition in partitions:
                if partition not in initialized:
                    offsets.append(PartitionOffset(partition, -1, -1))
                    continue
                key = SharePartitionKey(group_id, described.topic_id, partition)
                try:
                    summary = await self.persister.read_summary(key, ANY_LEADER_EPOCH)
                except ShareStateError as refused:
                    offsets.append(PartitionOffset(partition, -1, -1, refused.error_code))
                    continue
                offsets.append(PartitionOffset(partition, summary.start_offset, summary.leader_epoch))
                if summary.start_offset >= 0 and summary.delivery_complete_count >= 0:
                    summaries[TopicPartition(name, partition)] = summary
            answer.append(TopicOffsets(name, described.topic_id, offsets))
        if not summaries or self.end_offsets is None:
            return answer
        return await self._with_lag(answer, summaries, self.end_offsets)

    async def _with_lag(
        self,
        answer: list[TopicOffsets],
        summaries: dict[TopicPartition, ShareStateSummary],
        end_offsets: PartitionEndOffsets,
    ) -> list[TopicOffsets]:
        """The lag of every partition with a start offset and a delivery-complete count, from the end
        offsets of all of them, asked at once; a partition whose end is not known gets its leader's
        error and no offsets, as Kafka 4.4 answers it."""
        ends = await end_offsets.latest_offsets(list(summaries))
        lagged = []
        for topic in answer:
            partitions = []
            for offset in topic.partitions:
                tp = TopicPartition(topic.name, offset.partition)
                summary, end = summaries.get(tp), ends.get(tp)
                if summary is None or end is None:
                    partitions.append(offset)
                elif end.error is not ErrorCode.NONE:
                    partitions.append(PartitionOffset(offset.partition, 0, 0, end.error))
                else:
                    lag = end.offset - summary.start_offset - summary.delivery_complete_count
                    partitions.append(
                        PartitionOffset(offset.partition, summary.start_offset, summary.leader_epoch, lag=lag)
                    )
            lagged.append(TopicOffsets(topic.name, topic.topic_id, partitions, topic.error))
        return lagged

    async def alter(self, group_id: str, wanted: dict[str, dict[int, int]]) -> list[TopicOffsets]:
        """Start each partition's state again at the offset given (a higher state epoch), and record it."""
        group = self._empty_group(group_id)
        answer = []
        done: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        for name, offsets in wanted.items():
            described = self.topics.topic(name)
            if described is None:
                missing = [PartitionOffset(p, -1, -1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for p in offsets]
                answer.append(TopicOffsets(name, uuid.UUID(int=0), missing))
                continue
            results = []
            for partition, start_offset in sorted(offsets.items()):
                key = SharePartitionKey(group_id, described.topic_id, partition)
                if not 0 <= partition < len(described.partitions) or start_offset < 0:
                    error = (
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                        if start_offset >= 0
                        else ErrorCode.INVALID_REQUEST
                    )
                    results.append(PartitionOffset(partition, start_offset, -1, error))
                    continue
                try:
                    epoch = await self._state_epoch(key)
                    await self.persister.initialize(key, epoch + 1, start_offset)
                except ShareStateError as refused:
                    results.append(PartitionOffset(partition, start_offset, -1, refused.error_code))
                    continue
                results.append(PartitionOffset(partition, start_offset, -1))
                done[described.topic_id] = (
                    name,
                    done.get(described.topic_id, (name, frozenset()))[1] | {partition},
                )
            answer.append(TopicOffsets(name, described.topic_id, results))
        await self._write(group.group_id, lambda shard: shard.share.mark_initialized(group_id, done))
        return answer

    async def delete(self, group_id: str, names: list[str]) -> list[TopicOffsets]:
        """Forget the state of every partition of these topics for the group, and record it."""
        group = self._empty_group(group_id)
        answer = []
        gone: set[uuid.UUID] = set()
        for name in names:
            described = self.topics.topic(name)
            initialized = group.initialized.get(described.topic_id) if described is not None else None
            if described is None or initialized is None:
                answer.append(TopicOffsets(name, uuid.UUID(int=0), [], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            error = ErrorCode.NONE
            for partition in sorted(initialized[1]):
                try:
                    await self.persister.delete(SharePartitionKey(group_id, described.topic_id, partition))
                except ShareStateError as refused:
                    error = refused.error_code
            if error is ErrorCode.NONE:
                gone.add(described.topic_id)
            answer.append(TopicOffsets(name, described.topic_id, [], error))
        await self._write(group.group_id, lambda shard: shard.share.mark_uninitialized(group_id, gone))
        return answer

    # ----- helpers ---------------------------------------------------------------------------------

    def _group(self, group_id: str) -> ShareGroup:
        group = self.runtime.shard_for(group_id).groups.get(group_id)
        if not isinstance(group, ShareGroup):
            reason = "not found" if group is None else "is not a share group"
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} {reason}.")
        return group

    def _empty_group(self, group_id: str) -> ShareGroup:
        group = self._group(group_id)
        if not group.is_empty:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"Share group {group_id} has members.")
        return group

    async def _state_epoch(self, key: SharePartitionKey) -> int:
        try:
            return (await self.persister.read_summary(key, ANY_LEADER_EPOCH)).state_epoch
        except ShareStateError as refused:
            if refused.error_code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND):
                return 0  # never initialised
            raise

    async def _write(self, group_id: str, step: Callable[[GroupShard], CoordinatorResult[None]]) -> None:
        shard = self.runtime.shard_for(group_id)
        before = self.runtime.log_end(shard.partition)
        error = self.runtime.write(shard, step(shard))
        if error is None:
            error = await self.runtime.committed(shard.partition, before)
        if error is not None:
            raise KafkaError(error)
