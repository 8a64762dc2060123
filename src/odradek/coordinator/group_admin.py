"""DescribeGroups, ListGroups and DeleteGroups: what `kafka-consumer-groups`-style tools ask about groups."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.coordinator.classic_group import ClassicGroup, ClassicGroupState
from odradek.coordinator.offset_requests import delete_all_offsets
from odradek.coordinator.records import CoordinatorRecord, group_metadata_tombstone
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.shard import GroupShard
from odradek.coordinator.share_group import ShareGroup
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_groups import DescribedGroup, DescribedGroupMember

S = ClassicGroupState


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


def describe_group(shard: GroupShard, group_id: str, api_version: int) -> DescribedGroup:
    """A classic group as DescribeGroups shows it: members' metadata and assignments only when Stable."""
    group = shard.groups.get(group_id)
    if not isinstance(group, ClassicGroup) or group.is_in(S.DEAD):
        if api_version >= 6:
            reason = "not found" if group is None else "is not a classic group"
            return DescribedGroup(
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} {reason}.",
                group_id=group_id,
                group_state="Dead",
            )
        return DescribedGroup(error_code=ErrorCode.NONE, group_id=group_id, group_state="Dead")
    stable = group.is_in(S.STABLE)
    members = [
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(group.protocol_name) if stable else b"",
            member_assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    ]
    return DescribedGroup(
        error_code=ErrorCode.NONE,
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
    )


def list_groups(shard: GroupShard, states: set[str], types: set[str]) -> list[ListedGroup]:
    """Groups whose state (lower-cased) is in `states` and type in `types` (empty sets match all)."""
    listed = []
    for group_id, group in shard.groups.items():
        if isinstance(group, ClassicGroup):
            if group.is_in(S.DEAD):
                continue
            entry = ListedGroup(group_id, group.protocol_type or "", group.state.value, "classic")
        elif isinstance(group, ShareGroup):
            entry = ListedGroup(group_id, "share", group.state_name, "share")
        else:
            entry = ListedGroup(group_id, "consumer", group.state_name, "consumer")
        if states and entry.group_state.lower() not in states:
            continue
        if types and entry.group_type not in types:
            continue
        listed.append(entry)
    return listed


def delete_groups(shard: GroupShard, group_ids: list[str]) -> CoordinatorResult[dict[str, ErrorCode]]:
    """Tombstones for every offset and the group itself, for each group that exists and is empty."""
    errors: dict[str, ErrorCode] = {}
    records: list[CoordinatorRecord] = []
    for group_id in group_ids:
        group = shard.groups.get(group_id)
        if group is None or (isinstance(group, ClassicGroup) and group.is_in(S.DEAD)):
            errors[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
        elif not shard.is_group_empty(group):
            errors[group_id] = ErrorCode.NON_EMPTY_GROUP
        else:
            errors[group_id] = ErrorCode.NONE
            records += delete_all_offsets(shard, group_id)
            records += group_tombstones(shard, group_id)
    return CoordinatorResult(records, errors, replay=True)


def group_tombstones(shard: GroupShard, group_id: str) -> list[CoordinatorRecord]:
    group = shard.groups.get(group_id)
    if isinstance(group, ClassicGroup) or group is None:
        return [group_metadata_tombstone(group_id)]
    if isinstance(group, ShareGroup):
        return shard.share.tombstones(group)
    return shard.consumer.tombstones(group)
