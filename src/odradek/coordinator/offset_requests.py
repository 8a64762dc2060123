"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry, checked against the group they belong to.

Each returns a CoordinatorResult whose records (OffsetCommit values or tombstones) are replayed into
the offset store once appended; the caller answers only after that.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.coordinator.classic_group import ClassicGroup, ClassicGroupState
from odradek.coordinator.offsets import OffsetAndMetadata
from odradek.coordinator.records import CoordinatorRecord, offset_commit_record, offset_commit_tombstone
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.shard import GroupShard
from odradek.coordinator.share_group import ShareGroup
from odradek.protocol.error_codes import ErrorCode, KafkaError

S = ClassicGroupState
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class OffsetCommitItem:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True, slots=True)
class OffsetCommitContext:
    group_id: str
    member_id: str
    generation_id_or_member_epoch: int
    group_instance_id: str | None
    retention_time_ms: int
    api_version: int


def commit_offsets(
    shard: GroupShard, context: OffsetCommitContext, items: list[OffsetCommitItem]
) -> CoordinatorResult[dict[TopicPartition, ErrorCode]]:
    """Validate the committer, then one OffsetCommit record per partition (whose metadata fits)."""
    group = shard.groups.get(context.group_id)
    if group is None:
        if context.generation_id_or_member_epoch >= 0:
            # v9+ says so plainly; older clients expect ILLEGAL_GENERATION.
            raise KafkaError(
                ErrorCode.GROUP_ID_NOT_FOUND if context.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION
            )
        # A commit outside group management (an admin tool, assign()): replaying it creates a
        # "simple" group, an empty classic group without a protocol type.
    elif isinstance(group, ClassicGroup):
        _validate_classic_commit(group, context)
        if group.is_in(S.STABLE, S.PREPARING_REBALANCE) and context.member_id in group.members:
            # A commit keeps a classic member's session alive, as a heartbeat does.
            shard.rebalancer.reschedule_heartbeat(group, group.member(context.member_id))
    else:
        shard.validate_consumer_group_commit(
            group, context.member_id, context.generation_id_or_member_epoch, context.api_version
        )
    now = shard.now_ms()
    expire = None if context.retention_time_ms == -1 else now + context.retention_time_ms
    max_metadata = shard.settings.offset_metadata_max_bytes
    errors: dict[TopicPartition, ErrorCode] = {}
    records: list[CoordinatorRecord] = []
    for item in items:
        metadata = item.metadata or ""
        if item.metadata is not None and len(item.metadata) > max_metadata:
            errors[(item.topic, item.partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            continue
        errors[(item.topic, item.partition)] = ErrorCode.NONE
        records.append(
            offset_commit_record(
                context.group_id,
                item.topic,
                item.partition,
                item.offset,
                item.leader_epoch,
                metadata,
                now,
                expire,
            )
        )
    return CoordinatorResult(records, errors, replay=True)


def _validate_classic_commit(group: ClassicGroup, context: OffsetCommitContext) -> None:
    """Kafka's ClassicGroup.validateOffsetCommit."""
    if group.is_in(S.DEAD):
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    generation = context.generation_id_or_member_epoch
    if generation < 0 and group.is_in(S.EMPTY):
        return  # outside group management, into an empty group
    if generation >= 0 or context.member_id or context.group_instance_id is not None:
        group.validate_member(context.member_id, context.group_instance_id)
        if generation != group.generation_id:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
    elif not group.is_in(S.EMPTY):
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.is_in(S.COMPLETING_REBALANCE):
        # The member has its JoinGroup answer but not yet its assignment: let it sync first.
        raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)


def fetch_offsets(
    shard: GroupShard, group_id: str, wanted: list[tuple[str, list[int]]] | None
) -> list[tuple[str, list[tuple[int, OffsetAndMetadata | None]]]]:
    """The group's committed offsets for `wanted` topics and partitions (all of them when None).
    A partition without a committed offset comes back with None; a missing group has none."""
    offsets = shard.offsets.group(group_id) if group_id in shard.groups else {}
    if wanted is None:
        return [(topic, sorted(partitions.items())) for topic, partitions in sorted(offsets.items())]
    answer: list[tuple[str, list[tuple[int, OffsetAndMetadata | None]]]] = []
    for topic, partitions in wanted:
        committed = offsets.get(topic, {})
        answer.append((topic, [(p, committed.get(p)) for p in partitions]))
    return answer


def delete_offsets(
    shard: GroupShard, group_id: str, wanted: list[tuple[str, list[int]]]
) -> CoordinatorResult[dict[TopicPartition, ErrorCode]]:
    """OffsetDelete: tombstones for partitions of topics the group no longer consumes."""
    group = shard.groups.get(group_id)
    if group is None:
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if isinstance(group, ClassicGroup):
        if group.is_in(S.DEAD):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is in dead state.")
        if not group.is_empty and not group.uses_consumer_protocol:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP)
    elif isinstance(group, ShareGroup):
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
    subscribed = shard.is_subscribed_to_topic
    errors: dict[TopicPartition, ErrorCode] = {}
    records: list[CoordinatorRecord] = []
    for topic, partitions in wanted:
        for partition in partitions:
            if subscribed(group, topic):
                errors[(topic, partition)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            errors[(topic, partition)] = ErrorCode.NONE
            if shard.offsets.get(group_id, topic, partition) is not None:
                records.append(offset_commit_tombstone(group_id, topic, partition))
    return CoordinatorResult(records, errors, replay=True)


def delete_all_offsets(shard: GroupShard, group_id: str) -> list[CoordinatorRecord]:
    return [offset_commit_tombstone(group_id, t, p) for t, p in shard.offsets.partitions(group_id)]


def expire_offsets(shard: GroupShard, group_id: str) -> tuple[list[CoordinatorRecord], bool]:
    """Tombstones for the group's expired offsets, and whether the group is left with none."""
    group = shard.groups.get(group_id)
    if group is None:
        return [], True
    condition = shard.offset_expiration_base(group)
    if condition is None:
        return [], not shard.offsets.has_offsets(group_id)
    expired = shard.offsets.expired(
        group_id,
        condition,
        lambda topic: shard.is_subscribed_to_topic(group, topic),
        shard.now_ms(),
        shard.settings.offsets_retention_ms,
    )
    # A commit still on its way to the ISR is the partition's newest: its older offset is not expired.
    awaiting = shard.unreplicated_partitions(group_id)
    expired = [tp for tp in expired if tp not in awaiting]
    remaining = len(set(shard.offsets.partitions(group_id)) | awaiting) - len(expired)
    return [offset_commit_tombstone(group_id, t, p) for t, p in expired], remaining == 0
