"""The fencing of consumer group members (KIP-848): a member removed by the group (its records'
tombstones and a group epoch bump), and the two timers that remove one on their own, as Kafka's
GroupMetadataManager schedules them: the session timeout (a member silent too long) and the rebalance
timeout (a member that keeps partitions it was asked to revoke). Timers, never polling; a timer that
fires for a member gone or at another epoch meanwhile does nothing.
"""

from __future__ import annotations

import logging
from typing import Protocol

from odradek.coordinator import consumer_records as cr
from odradek.coordinator.consumer_group import ConsumerGroup, ConsumerMember, MemberState
from odradek.coordinator.consumer_regexes import RegexResolver
from odradek.coordinator.consumer_targets import metadata_hash
from odradek.coordinator.group_types import Group
from odradek.coordinator.ports import MetadataView
from odradek.coordinator.records import CoordinatorRecord
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.settings import GroupSettings
from odradek.coordinator.timer import CoordinatorTimer

log = logging.getLogger("odradek.coordinator.consumer")


def session_key(group_id: str, member_id: str) -> str:
    return f"session-timeout-{group_id}-{member_id}"


def rebalance_key(group_id: str, member_id: str) -> str:
    return f"rebalance-timeout-{group_id}-{member_id}"


class ConsumerShard(Protocol):
    """What the consumer protocol needs of its shard (coordinator.shard.GroupShard, which holds the
    manager): the groups of every kind, by id, the settings, the timer and the clock."""

    @property
    def groups(self) -> dict[str, Group]: ...

    @property
    def settings(self) -> GroupSettings: ...

    @property
    def timer(self) -> CoordinatorTimer: ...

    def now_ms(self) -> int: ...


class MemberFencing:
    def __init__(self, shard: ConsumerShard, cluster: MetadataView, regexes: RegexResolver) -> None:
        self.shard = shard
        self.cluster = cluster
        self.regexes = regexes

    def fence(self, group: ConsumerGroup, member: ConsumerMember) -> list[CoordinatorRecord]:
        """Remove `member`: its records' tombstones and a group epoch bump (the others rebalance)."""
        self.cancel_timers(group.group_id, member.member_id)
        remaining = [m for m in group.members.values() if m.member_id != member.member_id]
        return [
            *cr.member_tombstones(group.group_id, member.member_id),
            *self.regexes.unused_tombstones(group, remaining),
            cr.group_epoch_record(
                group.group_id,
                group.group_epoch + 1,
                metadata_hash(self.cluster, remaining, group.resolved_regexes),
            ),
        ]

    def _fence_by_timer(
        self, group_id: str, member_id: str, epoch: int | None, reason: str
    ) -> CoordinatorResult[None] | None:
        group = self.shard.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            return None
        member = group.members.get(member_id)
        if member is None or (epoch is not None and member.member_epoch != epoch):
            return None
        log.info("member %s of consumer group %s fenced: %s", member_id, group_id, reason)
        return CoordinatorResult(self.fence(group, member), None, replay=True)

    def schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.shard.timer.schedule(
            session_key(group_id, member_id),
            self.shard.settings.consumer_group(group_id).session_timeout_ms,
            lambda: self._fence_by_timer(group_id, member_id, None, "its session expired"),
        )

    def schedule_rebalance_timeout(self, group_id: str, member: ConsumerMember) -> None:
        key = rebalance_key(group_id, member.member_id)
        if member.state is not MemberState.UNREVOKED_PARTITIONS:
            self.shard.timer.cancel(key)
            return
        epoch, member_id = member.member_epoch, member.member_id
        timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else 300_000
        self.shard.timer.schedule(
            key,
            timeout,
            lambda: self._fence_by_timer(group_id, member_id, epoch, "it kept revoked partitions"),
        )

    def cancel_rebalance_timeout(self, group_id: str, member_id: str) -> None:
        self.shard.timer.cancel(rebalance_key(group_id, member_id))

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        self.shard.timer.cancel(session_key(group_id, member_id))
        self.shard.timer.cancel(rebalance_key(group_id, member_id))
