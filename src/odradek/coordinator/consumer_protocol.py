"""ConsumerGroupHeartbeat (KIP-848): members join, heartbeat, reconcile and leave in one request.

A heartbeat (1) creates or updates the member, bumping the group epoch when the membership, a
subscription or a subscribed topic's partitions change; (2) computes a new target assignment with the
server-side assignor when the group epoch is ahead of it; (3) moves the member towards its target
(consumer_reconcile). Every change is a record, and the group is the replay of its records. Session
timeouts fence silent members; a member that keeps partitions it was asked to revoke past its
rebalance timeout is fenced too. Both are timers, never polling (consumer_fencing.py).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import replace

from odradek.coordinator import consumer_records as cr
from odradek.coordinator.assignors import ASSIGNORS
from odradek.coordinator.classic_group import ClassicGroup
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.consumer_checks import (
    check_epoch,
    partitions_of,
    topic_partitions_of,
    validate_heartbeat,
    validate_offset_commit,
    validate_offset_fetch,
)
from odradek.coordinator.consumer_fencing import ConsumerShard, MemberFencing
from odradek.coordinator.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerMember,
)
from odradek.coordinator.consumer_reconcile import reconcile
from odradek.coordinator.consumer_regexes import RegexResolver, RegexUpdate, TopicFilter, describe_all
from odradek.coordinator.consumer_replay import replay
from odradek.coordinator.consumer_targets import (
    compute_targets,
    metadata_hash,
    preferred_assignor,
    subscribed_ids,
)
from odradek.coordinator.offsets import OffsetAndMetadata
from odradek.coordinator.ports import MetadataView
from odradek.coordinator.records import CoordinatorRecord, group_metadata_tombstone
from odradek.coordinator.result import CoordinatorResult
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

log = logging.getLogger("odradek.coordinator.consumer")

Result = CoordinatorResult[ConsumerGroupHeartbeatResponse]


class ConsumerGroupManager:
    def __init__(self, shard: ConsumerShard, cluster: MetadataView, regexes: RegexMatcher) -> None:
        self.shard = shard
        self.cluster = cluster
        self.regexes = RegexResolver(shard, cluster, regexes)
        #: Members removed: on leaving, and by their session and rebalance timers.
        self.fencing = MemberFencing(shard, cluster, self.regexes)

    # ----- heartbeat -------------------------------------------------------------------------------

    def heartbeat(
        self,
        request: ConsumerGroupHeartbeatRequest,
        api_version: int,
        client_id: str,
        client_host: str,
        describable: TopicFilter = describe_all,
    ) -> Result:
        """One heartbeat; `describable` tells which topics the member may DESCRIBE (its regex resolves
        to those only). A regex it brings has been checked already (GroupCoordinator)."""
        validate_heartbeat(request, api_version, self._assignor_names())
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        records: list[CoordinatorRecord] = []
        group = self._group_for(request.group_id, request.member_epoch == 0, records)
        member_id = request.member_id or str(uuid.uuid4())
        self._check_not_full(group, member_id)
        member, base, replaced = self._member_for(group, request, member_id, records)
        updated = replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=member.rebalance_timeout_ms
            if request.rebalance_timeout_ms == -1
            else request.rebalance_timeout_ms,
            server_assignor=request.server_assignor
            if request.server_assignor is not None
            else member.server_assignor,
            subscribed_topic_names=tuple(sorted(request.subscribed_topic_names))
            if request.subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=request.subscribed_topic_regex
            if request.subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            client_id=client_id,
            client_host=client_host,
        )
        is_new = member_id not in group.members or replaced is not None
        base = base or ConsumerMember(member_id)
        if is_new or not updated.same_metadata(base):
            records.append(cr.member_metadata_record(group.group_id, member_id, updated.metadata_value()))
        members = {m: x for m, x in group.members.items() if m != (replaced.member_id if replaced else None)}
        members[member_id] = updated
        regex_update = self.regexes.on_heartbeat(
            group,
            base.subscribed_topic_regex,
            updated.subscribed_topic_regex,
            members,
            records,
            describable,
        )
        # As Kafka: a new group, other topic names, or a regex the group has resolved already move the
        # epoch now; a regex not resolved yet moves it when its resolution is written.
        bump = (
            group.group_epoch == 0
            or updated.subscribed_topic_names != base.subscribed_topic_names
            or regex_update is RegexUpdate.UPDATED_AND_RESOLVED
        )
        topics_hash = metadata_hash(self.cluster, members.values(), group.resolved_regexes)
        group_epoch = group.group_epoch
        if bump or topics_hash != group.metadata_hash:
            group_epoch += 1
            records.append(cr.group_epoch_record(group.group_id, group_epoch, topics_hash))
            log.info("group %s epoch bumped to %d", group.group_id, group_epoch)
        target_epoch = group.assignment_epoch
        target = group.target.get(member_id, {})
        if replaced is not None:
            target = group.target.get(replaced.member_id, {})
        if group_epoch > target_epoch or replaced is not None:
            targets = compute_targets(self.cluster, self._assignor_names(), group, members, replaced, updated)
            for other, partitions in targets.items():
                before = {} if replaced is not None and other == member_id else group.target.get(other, {})
                if partitions != before:
                    records.append(cr.target_assignment_record(group.group_id, other, partitions))
            records.append(cr.target_assignment_epoch_record(group.group_id, group_epoch))
            target, target_epoch = targets.get(member_id, {}), group_epoch
        owned = None if request.topic_partitions is None else partitions_of(request.topic_partitions)
        reconciled = reconcile(
            updated,
            target_epoch,
            target,
            subscribed_ids(self.cluster, updated, group.resolved_regexes),
            group.owner,
            owned,
        )
        if is_new or not reconciled.same_assignment(member):
            records.append(
                cr.current_assignment_record(
                    group.group_id,
                    member_id,
                    reconciled.member_epoch,
                    reconciled.previous_member_epoch,
                    int(reconciled.state),
                    reconciled.assigned,
                    reconciled.pending_revocation,
                )
            )
            self.fencing.schedule_rebalance_timeout(group.group_id, reconciled)
        self.fencing.schedule_session_timeout(group.group_id, member_id)
        response = ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.NONE,
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.shard.settings.consumer_group(group.group_id).heartbeat_interval_ms,
        )
        full_request = request.member_epoch == 0 or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.topic_partitions is not None
        )
        if full_request or reconciled.assigned != member.assigned or is_new:
            response.assignment = Assignment(topic_partitions=topic_partitions_of(reconciled.assigned))
        return CoordinatorResult(records, response, replay=True)

    def _group_for(self, group_id: str, create: bool, records: list[CoordinatorRecord]) -> ConsumerGroup:
        group = self.shard.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return group
        if group is None and not create:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if group is None:
            return ConsumerGroup(group_id)
        if not isinstance(group, ClassicGroup):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if create and group.is_empty and not group.members and not group.pending_join_members:
            records.append(group_metadata_tombstone(group_id))  # an empty classic group is replaced
            return ConsumerGroup(group_id)
        raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _check_not_full(self, group: ConsumerGroup, member_id: str) -> None:
        """group.consumer.max.size: a member that would make the group bigger is refused, as in Kafka."""
        max_size = self.shard.settings.consumer_max_size
        if member_id not in group.members and len(group.members) >= max_size:
            raise KafkaError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )

    def _member_for(
        self,
        group: ConsumerGroup,
        request: ConsumerGroupHeartbeatRequest,
        member_id: str,
        records: list[CoordinatorRecord],
    ) -> tuple[ConsumerMember, ConsumerMember | None, ConsumerMember | None]:
        """(the member to update, what its metadata is compared with (None: a new member), the earlier
        incarnation it replaces if any)."""
        epoch = request.member_epoch
        owned = None if request.topic_partitions is None else partitions_of(request.topic_partitions)
        instance_id = request.instance_id
        if instance_id is not None:
            static = group.static_member(instance_id)
            if epoch == 0:
                if static is None:
                    existing = group.members.get(member_id)
                    return existing or ConsumerMember(member_id), existing, None
                if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise KafkaError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {member_id} with instance id {instance_id} cannot join the group "
                        f"because the instance id is owned by {static.member_id} member.",
                    )
                # The static member comes back: it takes over its previous incarnation's partitions.
                records += cr.member_tombstones(group.group_id, static.member_id)
                self.fencing.cancel_timers(group.group_id, static.member_id)
                return ConsumerMember(member_id, assigned=dict(static.assigned)), static, static
            if static is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if static.member_id != member_id:
                raise KafkaError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} was fenced by member "
                    f"{static.member_id}.",
                )
            check_epoch(static, epoch, owned)
            return static, static, None
        existing = group.members.get(member_id)
        if existing is None:
            if epoch != 0:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
                )
            return ConsumerMember(member_id), None, None
        if epoch == 0 and existing.previous_member_epoch != 0:
            # Rejoining after being fenced, under the same id (KIP-1082): start afresh.
            records += cr.member_tombstones(group.group_id, member_id)
            self.fencing.cancel_timers(group.group_id, member_id)
            return ConsumerMember(member_id), None, existing
        check_epoch(existing, epoch, owned)
        return existing, existing, None

    # ----- leaving ---------------------------------------------------------------------------------

    def _leave(self, request: ConsumerGroupHeartbeatRequest) -> Result:
        group = self._group_for(request.group_id, False, [])
        member_id, instance_id = request.member_id, request.instance_id
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
                )
        else:
            member = group.static_member(instance_id)
            if member is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if member.member_id != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} was fenced.")
        response = ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=member_id, member_epoch=request.member_epoch
        )
        if instance_id is not None and request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # A static member leaving for a moment keeps its partitions for its session timeout.
            log.info(
                "static member %s (%s) of group %s left temporarily", member_id, instance_id, group.group_id
            )
            record = cr.current_assignment_record(
                group.group_id,
                member_id,
                LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                member.previous_member_epoch,
                int(member.state),
                member.assigned,
                {},
            )
            self.fencing.cancel_rebalance_timeout(group.group_id, member_id)
            return CoordinatorResult([record], response, replay=True)
        log.info("member %s left consumer group %s", member_id, group.group_id)
        return CoordinatorResult(self.fencing.fence(group, member), response, replay=True)

    # ----- hooks used by the shard -----------------------------------------------------------------

    def on_loaded(self, group: ConsumerGroup) -> None:
        group.forget_regex_versions()
        for member in group.members.values():
            self.fencing.schedule_session_timeout(group.group_id, member.member_id)
            self.fencing.schedule_rebalance_timeout(group.group_id, member)

    def on_removed(self, group: ConsumerGroup) -> None:
        for member_id in group.members:
            self.fencing.cancel_timers(group.group_id, member_id)

    def on_unloaded(self) -> None:
        self.regexes.cancel_all()

    def _assignor_names(self) -> list[str]:
        return [name for name in self.shard.settings.consumer_assignors if name in ASSIGNORS] or ["uniform"]

    def preferred_assignor(self, group: ConsumerGroup) -> str:
        return preferred_assignor(self._assignor_names(), group.members.values())

    def validate_offset_commit(
        self, group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int
    ) -> None:
        validate_offset_commit(group, member_id, member_epoch, api_version)

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str, member_epoch: int) -> None:
        validate_offset_fetch(group, member_id, member_epoch)

    def offset_expiration_base(self, group: ConsumerGroup) -> Callable[[OffsetAndMetadata], int]:
        """A consumer group's offsets age from their commit (topics it subscribes to never expire)."""
        return lambda offset: offset.commit_timestamp_ms

    def tombstones(self, group: ConsumerGroup) -> list[CoordinatorRecord]:
        return [*self.regexes.all_tombstones(group), *cr.group_tombstones(group.group_id)]

    def replay(self, record: CoordinatorRecord) -> None:
        replay(self.shard.groups, record)
