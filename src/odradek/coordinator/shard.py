"""One `__consumer_offsets` partition's worth of coordinator state: its groups and committed offsets.

Kafka splits the coordinator into one shard per partition of `__consumer_offsets`; a group lives in
the partition its id hashes to, and so do its offsets. The shard is rebuilt by replaying that
partition's records (`replay`), then `on_loaded` starts the members' session timers.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from odradek.coordinator.classic_group import ClassicGroup, ClassicGroupState, ClassicMember
from odradek.coordinator.classic_rebalance import ClassicRebalancer
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.consumer_group import ConsumerGroup
from odradek.coordinator.consumer_protocol import ConsumerGroupManager
from odradek.coordinator.group_types import Group
from odradek.coordinator.offsets import OffsetAndMetadata, OffsetStore
from odradek.coordinator.ports import MetadataView
from odradek.coordinator.records import (
    GROUP_METADATA,
    OFFSET_COMMIT,
    OFFSET_COMMIT_LEGACY,
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordType,
    decode_record,
)
from odradek.coordinator.settings import GroupSettings
from odradek.coordinator.share_group import ShareGroup
from odradek.coordinator.share_members import ShareGroupManager
from odradek.coordinator.share_records import SHARE_RECORD_TYPES
from odradek.coordinator.share_replay import replay_share_record
from odradek.coordinator.timer import CoordinatorTimer
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.coordinator")

S = ClassicGroupState


class GroupShard:
    def __init__(
        self,
        partition: int,
        settings: GroupSettings,
        timer: CoordinatorTimer,
        now_ms: Callable[[], int],
        cluster: MetadataView,
        regexes: RegexMatcher,
    ) -> None:
        self.partition = partition
        self.settings = settings
        self.now_ms = now_ms
        self.groups: dict[str, Group] = {}
        self.offsets = OffsetStore()
        #: Offset commits of open transactions, by producer id: applied at the COMMIT marker, dropped at
        #: ABORT (Kafka's pending transactional offsets), so read_committed readers of the input agree.
        self.pending_txn_offsets: dict[int, list[CoordinatorRecord]] = {}
        #: Offset commits (and their tombstones) appended but not yet on the in-sync replicas, oldest
        #: first, each with the high watermark that commits it (Kafka's pending offset commits): what
        #: OffsetFetch returns is only what a new coordinator elected from the ISR would replay too.
        self.unreplicated_offsets: deque[tuple[int, CoordinatorRecord]] = deque()
        self.timer = timer
        self.rebalancer = ClassicRebalancer(self.groups, self.timer, settings, now_ms)
        self.consumer = ConsumerGroupManager(self, cluster, regexes)
        self.share = ShareGroupManager(self.groups, settings, timer, cluster, now_ms)

    # ----- replay --------------------------------------------------------------------------------

    def replay_log_record(
        self, key: bytes | None, value: bytes | None, offset: int, producer_id: int | None
    ) -> bool:
        """One record of `__consumer_offsets` on load (of a transactional batch of `producer_id`: a
        TxnOffsetCommit, pending until its marker); False for a type this broker does not know."""
        try:
            record = decode_record(key, value)
        except UnknownRecordType:
            return False
        if producer_id is None:
            self.replay(record)
        else:
            self.replay_transactional(producer_id, record)
        return True

    def replay_marker(self, producer_id: int, committed: bool) -> None:
        self.complete_transaction(producer_id, committed)

    def loaded_keys(self) -> int:
        return len(self.groups)

    def replay_transactional(self, producer_id: int, record: CoordinatorRecord) -> None:
        """A TxnOffsetCommit record: held until its transaction's marker."""
        if record.record_type in (OFFSET_COMMIT, OFFSET_COMMIT_LEGACY):
            self.pending_txn_offsets.setdefault(producer_id, []).append(record)

    def pending_offsets(self, group_id: str) -> set[tuple[str, int]]:
        """The group's partitions whose committed offset is about to change (Kafka's
        hasPendingOffsetCommitsForTopicPartition): a transactional offset commit waiting for its
        marker, or an offset commit (a transaction's, its COMMIT marker appended) not yet on the
        in-sync replicas. Between the marker's append and its replication the previous offset is what
        OffsetFetch returns: a `require_stable` reader must wait that out too."""
        pending = {
            (record.key.topic, record.key.partition)
            for records in self.pending_txn_offsets.values()
            for record in records
            if isinstance(record.key, OffsetCommitKey) and record.key.group == group_id
        }
        return pending | self.unreplicated_partitions(group_id)

    def complete_transaction(
        self, producer_id: int, committed: bool, committed_at: int | None = None
    ) -> None:
        """The transaction marker of `producer_id`: its pending offsets become committed, or vanish. On
        the live path (`committed_at`: the offset after the marker) they wait for the marker to be on the
        in-sync replicas, behind the offset commits appended before it."""
        records = self.pending_txn_offsets.pop(producer_id, [])
        if not committed:
            return
        if committed_at is None:
            for record in records:
                self.replay(record)
        else:
            self.replay_appended(records, committed_at)

    def replay_appended(self, records: Iterable[CoordinatorRecord], committed_at: int) -> None:
        """Records just appended, committed once the high watermark reaches `committed_at`: offset
        commits wait for that (`apply_replicated`), group records apply now (the next step of the
        group's protocol builds on them, as Kafka's uncommitted timeline; a failed write unloads the
        partition or answers the members with the error). An offset's tombstone (OffsetDelete, a
        deleted or expired group) applies now too and drops the commits of that partition still
        waiting, as Kafka's cleanupGroupMetadata: a deleted offset is never fetched again."""
        for record in records:
            if record.record_type in (OFFSET_COMMIT, OFFSET_COMMIT_LEGACY) and record.value is not None:
                self.unreplicated_offsets.append((committed_at, record))
                continue
            if isinstance(record.key, OffsetCommitKey):
                self._drop_unreplicated(record.key)
            self.replay(record)

    def _drop_unreplicated(self, key: OffsetCommitKey) -> None:
        self.unreplicated_offsets = deque((at, r) for at, r in self.unreplicated_offsets if r.key != key)

    def unreplicated_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """The group's partitions with an offset commit not yet on the in-sync replicas."""
        return {
            (record.key.topic, record.key.partition)
            for _, record in self.unreplicated_offsets
            if isinstance(record.key, OffsetCommitKey) and record.key.group == group_id and record.value
        }

    def apply_replicated(self, high_watermark: int) -> None:
        """Apply the offset commits the in-sync replicas now hold, in log order."""
        waiting = self.unreplicated_offsets
        while waiting and waiting[0][0] <= high_watermark:
            self.replay(waiting.popleft()[1])

    def replay(self, record: CoordinatorRecord) -> None:
        if record.record_type in (OFFSET_COMMIT, OFFSET_COMMIT_LEGACY):
            assert isinstance(record.key, OffsetCommitKey)
            value = record.value
            assert value is None or isinstance(value, OffsetCommitValue)
            if value is not None and record.key.group not in self.groups:
                self.groups[record.key.group] = self.simple_group(record.key.group)
            self.offsets.replay(record.key, value)
        elif record.record_type == GROUP_METADATA:
            assert isinstance(record.key, GroupMetadataKey)
            self._replay_group_metadata(record.key.group, record.value)
        elif record.record_type in SHARE_RECORD_TYPES:
            replay_share_record(self.groups, record)
        else:
            self.consumer.replay(record)

    def _replay_group_metadata(self, group_id: str, value: Any) -> None:
        if value is None:
            self.remove_group(group_id)
            return
        assert isinstance(value, GroupMetadataValue)
        group = ClassicGroup(
            group_id,
            clock=self.now_ms,
            state=S.STABLE if value.members else S.EMPTY,
            state_timestamp_ms=None if value.current_state_timestamp == -1 else value.current_state_timestamp,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            generation_id=value.generation,
            leader_id=value.leader,
        )
        for m in value.members:
            member = ClassicMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
                session_timeout_ms=m.session_timeout,
                protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", bytes(m.subscription))],
                assignment=bytes(m.assignment),
            )
            group.add(member)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        group.subscribed_topics = group.compute_subscribed_topics()
        self.groups[group_id] = group

    def on_loaded(self) -> None:
        """Start the session timers of every member loaded from the log, as if it had just heartbeated."""
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                for member in group.members.values():
                    self.rebalancer.reschedule_heartbeat(group, member)
            elif isinstance(group, ShareGroup):
                self.share.on_loaded(group)
            else:
                self.consumer.on_loaded(group)
        log.debug(
            "loaded __consumer_offsets partition %d: %d groups",
            self.partition,
            len(self.groups),
        )

    def unload(self) -> None:
        """Stop coordinating this partition: waiting members are told to find the new coordinator."""
        self.timer.cancel_all()
        self.consumer.on_unloaded()
        self.unreplicated_offsets.clear()
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                group.complete_all_with_error(ErrorCode.NOT_COORDINATOR)
                group.state = S.DEAD
        self.groups.clear()

    # ----- groups --------------------------------------------------------------------------------

    def simple_group(self, group_id: str) -> ClassicGroup:
        """The empty classic group, without protocol type, that offsets committed outside a group make."""
        return ClassicGroup(group_id, clock=self.now_ms, state_timestamp_ms=self.now_ms())

    def remove_group(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if isinstance(group, ClassicGroup):
            group.complete_all_with_error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            group.state = S.DEAD
        elif isinstance(group, ShareGroup):
            self.share.on_removed(group)
        elif group is not None:
            self.consumer.on_removed(group)

    def is_subscribed_to_topic(self, group: Group, topic: str) -> bool:
        return group.is_subscribed_to_topic(topic)

    def offset_expiration_base(self, group: Group) -> Callable[[OffsetAndMetadata], int] | None:
        """From when a group's offsets age (Kafka's offsetExpirationCondition), None if they don't."""
        if isinstance(group, ShareGroup):
            return None  # a share group has no committed offsets (its state is the share coordinator's)
        if not isinstance(group, ClassicGroup):
            return self.consumer.offset_expiration_base(group)
        if group.protocol_type is None:
            return lambda offset: offset.commit_timestamp_ms  # a simple group: since each commit
        if group.is_empty:
            since_empty = group.state_timestamp_ms
            return lambda offset: offset.commit_timestamp_ms if since_empty is None else since_empty
        if group.uses_consumer_protocol and group.subscribed_topics is not None and group.is_in(S.STABLE):
            return lambda offset: offset.commit_timestamp_ms
        return None

    def validate_consumer_group_commit(
        self, group: ConsumerGroup | ShareGroup, member_id: str, member_epoch: int, api_version: int
    ) -> None:
        if isinstance(group, ShareGroup):
            raise _not_a_consumer_group(group.group_id)
        self.consumer.validate_offset_commit(group, member_id, member_epoch, api_version)

    def validate_offset_fetch(self, group: Group, member_id: str, member_epoch: int) -> None:
        """KIP-848 members fetch with their epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID)."""
        if isinstance(group, ShareGroup):
            raise _not_a_consumer_group(group.group_id)
        if not isinstance(group, ClassicGroup):
            self.consumer.validate_offset_fetch(group, member_id, member_epoch)

    def is_group_deletable(self, group: Group) -> bool:
        """Empty, and not in the middle of letting its first members in (MEMBER_ID_REQUIRED)."""
        if isinstance(group, ClassicGroup):
            return group.is_empty and not group.members and not group.pending_join_members
        return group.is_empty

    def is_group_empty(self, group: Group) -> bool:
        return group.is_empty


def _not_a_consumer_group(group_id: str) -> KafkaError:
    """Kafka's answer to offset commits, fetches and deletes naming a share group."""
    return KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
