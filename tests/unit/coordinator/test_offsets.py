"""Committed offsets: commit validation, fetch, delete, expiry, deletion of groups, reload."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.unit.coordinator.harness import Harness, join, join_new_member, join_request, settle, start

MINUTE = 60_000


def run(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]], **overrides: str) -> None:
    async def main() -> None:
        harness = Harness(tmp_path, **overrides)
        await harness.start()
        await harness.create_topic("t", 2)
        await harness.create_topic("u", 1)
        try:
            await scenario(harness)
        finally:
            harness.stop()

    asyncio.run(main())


def commit(
    h: Harness,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    generation: int = -1,
    member: str = "",
    metadata: str | None = "",
    retention_ms: int = -1,
    version: int = 8,
) -> dict[tuple[str, int], ErrorCode]:
    context = OffsetCommitContext(group, member, generation, None, retention_ms, version)
    items = [OffsetCommitItem(t, p, o, 3, metadata) for (t, p), o in offsets.items()]
    return h.coordinator.offsets.commit_offsets(context, items)


def fetched(h: Harness, group: str) -> dict[tuple[str, int], int]:
    return {
        (t, p): o.offset
        for t, parts in h.coordinator.offsets.fetch_offsets(group, None)
        for p, o in parts
        if o
    }


async def member_of(h: Harness, group: str, topics: tuple[str, ...] = ("t",)) -> tuple[str, int]:
    """One member of a stable group subscribed to `topics`: (member id, generation)."""
    answer = (await join_new_member(h, group, topics=topics, session_ms=1_800_000)).result()
    request = SyncGroupRequest(
        group_id=group,
        generation_id=answer.generation_id,
        member_id=answer.member_id,
        assignments=[SyncGroupRequestAssignment(member_id=answer.member_id, assignment=b"")],
    )
    start(h.coordinator.sync_group(request))
    await settle()
    return answer.member_id, answer.generation_id


def test_a_simple_commit_makes_a_group_whose_offsets_can_be_fetched(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        assert commit(h, "simple", {("t", 0): 5, ("t", 1): 7}, metadata="m") == {("t", 0): 0, ("t", 1): 0}
        [(topic, partitions)] = h.coordinator.offsets.fetch_offsets("simple", [("t", [0, 1, 2])])
        answers = {p: (o.offset, o.leader_epoch, o.metadata) if o else None for p, o in partitions}
        assert topic == "t" and answers == {0: (5, 3, "m"), 1: (7, 3, "m"), 2: None}
        _error, listed = h.coordinator.list_groups(set(), set())
        assert [(g.group_id, g.protocol_type, g.group_state) for g in listed] == [("simple", "", "Empty")]
        assert h.coordinator.offsets.fetch_offsets("nobody", None) == []

    run(tmp_path, scenario)


def test_metadata_longer_than_the_limit_is_refused_per_partition(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        errors = commit(h, "g", {("t", 0): 1}, metadata="x" * 11)
        assert errors == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}
        assert fetched(h, "g") == {}

    run(tmp_path, scenario, **{"offset.metadata.max.bytes": "10"})


def test_commits_are_checked_against_the_group(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        for version, code in ((8, ErrorCode.ILLEGAL_GENERATION), (9, ErrorCode.GROUP_ID_NOT_FOUND)):
            with pytest.raises(KafkaError) as missing:
                commit(h, "missing", {("t", 0): 1}, generation=1, member="m", version=version)
            assert missing.value.error_code == code
        member, generation = await member_of(h, "g")
        assert commit(h, "g", {("t", 0): 1}, generation=generation, member=member) == {("t", 0): 0}
        for kwargs, code in (
            ({"generation": generation + 1, "member": member}, ErrorCode.ILLEGAL_GENERATION),
            ({"generation": generation, "member": "stranger"}, ErrorCode.UNKNOWN_MEMBER_ID),
            ({}, ErrorCode.UNKNOWN_MEMBER_ID),  # outside the group while it has members
        ):
            with pytest.raises(KafkaError) as refused:
                commit(h, "g", {("t", 0): 2}, **kwargs)  # type: ignore[arg-type]
            assert refused.value.error_code == code
        # Joined but not yet synced: REBALANCE_IN_PROGRESS, so the member syncs first.
        rejoin = await join(h, join_request("g", member, topics=("t", "u"), session_ms=1_800_000))
        with pytest.raises(KafkaError) as completing:
            commit(h, "g", {("t", 0): 2}, generation=rejoin.result().generation_id, member=member)
        assert completing.value.error_code == ErrorCode.REBALANCE_IN_PROGRESS
        assert fetched(h, "g") == {("t", 0): 1}

    run(tmp_path, scenario)


def test_offsets_of_subscribed_topics_cannot_be_deleted(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        member, generation = await member_of(h, "g", topics=("t",))
        commit(h, "g", {("t", 0): 1, ("u", 0): 2}, generation=generation, member=member)
        errors = h.coordinator.offsets.delete_offsets("g", [("t", [0]), ("u", [0])])
        assert errors == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE}
        assert fetched(h, "g") == {("t", 0): 1}
        with pytest.raises(KafkaError) as missing:
            h.coordinator.offsets.delete_offsets("missing", [("t", [0])])
        assert missing.value.error_code == ErrorCode.GROUP_ID_NOT_FOUND

    run(tmp_path, scenario)


def test_only_empty_groups_are_deleted_and_their_offsets_with_them(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        await member_of(h, "busy")
        commit(h, "idle", {("t", 0): 4})
        answers = h.coordinator.delete_groups(["busy", "idle", "missing", ""])
        assert answers == {
            "busy": ErrorCode.NON_EMPTY_GROUP,
            "idle": ErrorCode.NONE,
            "missing": ErrorCode.GROUP_ID_NOT_FOUND,
            "": ErrorCode.GROUP_ID_NOT_FOUND,  # Kafka keeps the empty group id for old clients
        }
        assert fetched(h, "idle") == {}
        await h.restart()
        assert fetched(h, "idle") == {}
        assert [g.group_id for g in h.coordinator.list_groups(set(), set())[1]] == ["busy"]

    run(tmp_path, scenario)


def test_offsets_of_an_empty_group_expire_after_the_retention_and_the_group_goes(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        member, generation = await member_of(h, "g")
        commit(h, "g", {("t", 0): 1}, generation=generation, member=member)
        await h.advance(5 * MINUTE)
        h.coordinator.leave_group(LeaveGroupRequest(group_id="g"), [MemberIdentity(member_id=member)])
        await h.advance(9 * MINUTE)  # retention counts from when the group became empty
        h.coordinator.offsets.expire_offsets()
        assert fetched(h, "g") == {("t", 0): 1}
        await h.advance(2 * MINUTE)
        assert h.coordinator.offsets.expire_offsets() == 2  # the offset and the group
        assert fetched(h, "g") == {} and h.coordinator.list_groups(set(), set())[1] == []
        await h.restart()
        assert h.coordinator.list_groups(set(), set())[1] == []

    run(tmp_path, scenario, **{"offsets.retention.minutes": "10"})


def test_a_stable_group_keeps_offsets_of_topics_it_consumes(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        member, generation = await member_of(h, "g", topics=("t",))
        commit(h, "g", {("t", 0): 1, ("u", 0): 2}, generation=generation, member=member)
        commit(h, "simple", {("t", 0): 3})
        commit(h, "explicit", {("t", 0): 3}, retention_ms=MINUTE, version=2)
        await h.advance(2 * MINUTE)
        h.coordinator.offsets.expire_offsets()
        assert fetched(h, "explicit") == {}  # its own retention (OffsetCommit v2-4)
        assert fetched(h, "simple") == {("t", 0): 3}
        await h.advance(10 * MINUTE)
        h.coordinator.offsets.expire_offsets()
        assert fetched(h, "g") == {("t", 0): 1}  # "u" is not subscribed any more: expired
        assert fetched(h, "simple") == {}

    run(tmp_path, scenario, **{"offsets.retention.minutes": "10", "group.max.session.timeout.ms": "3600000"})
