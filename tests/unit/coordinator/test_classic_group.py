"""The classic group state machine against Kafka's rules, with a manual clock (no sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from odradek.coordinator.classic_group import ClassicGroup, ClassicGroupState
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.heartbeat import HeartbeatRequest
from odradek.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from odradek.protocol.messages.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from tests.unit.coordinator.harness import Harness, join, join_new_member, join_request, settle, start


def run(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]], **overrides: str) -> None:
    async def main() -> None:
        harness = Harness(tmp_path, **overrides)
        await harness.start()
        await harness.create_topic("t", 2)
        try:
            await scenario(harness)
        finally:
            harness.stop()

    asyncio.run(main())


def group_of(h: Harness, group_id: str) -> ClassicGroup:
    shard = h.coordinator.runtime.shard_for(group_id)
    group = shard.groups[group_id]
    assert isinstance(group, ClassicGroup)
    return group


def heartbeat(h: Harness, group: str, generation: int, member: str, instance: str | None = None) -> ErrorCode:
    request = HeartbeatRequest(
        group_id=group, generation_id=generation, member_id=member, group_instance_id=instance
    )
    return h.coordinator.heartbeat(request)


async def sync(
    h: Harness,
    group: str,
    generation: int,
    member: str,
    assignments: dict[str, bytes] | None = None,
    instance: str | None = None,
) -> asyncio.Task[SyncGroupResponse]:
    request = SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member,
        group_instance_id=instance,
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()
        ],
    )
    task = start(h.coordinator.sync_group(request))
    await settle()
    return task


async def stable_pair(h: Harness, group: str) -> tuple[str, str, int]:
    """Two members in a stable group: (leader, follower, generation)."""
    first = await join_new_member(h, group)
    leader = first.result()
    await sync(h, group, leader.generation_id, leader.member_id, {leader.member_id: b"L"})
    second = await join_new_member(h, group)
    assert not second.done()  # waits for the first member to rejoin
    assert heartbeat(h, group, leader.generation_id, leader.member_id) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = await join(h, join_request(group, leader.member_id))
    assert rejoin.done() and second.done()
    generation = rejoin.result().generation_id
    assert generation == leader.generation_id + 1
    assert len(rejoin.result().members) == 2 and second.result().members == []
    follower = second.result().member_id
    waiting = await sync(h, group, generation, follower)
    assert not waiting.done()  # a follower waits for the leader's assignment
    await sync(h, group, generation, leader.member_id, {leader.member_id: b"L", follower: b"F"})
    assert waiting.result().assignment == b"F"
    assert group_of(h, group).state is ClassicGroupState.STABLE
    return leader.member_id, follower, generation


def test_a_new_member_is_asked_for_its_id_then_leads_generation_one(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        first = await join(h, join_request("g"))
        assert first.result().error_code == ErrorCode.MEMBER_ID_REQUIRED
        member_id = first.result().member_id
        assert member_id.startswith("client-")
        answer = (await join(h, join_request("g", member_id))).result()
        assert (answer.error_code, answer.generation_id, answer.leader, answer.protocol_name) == (
            0,
            1,
            member_id,
            "range",
        )
        assert [m.member_id for m in answer.members] == [member_id]
        synced = (await sync(h, "g", 1, member_id, {})).result()
        assert (synced.error_code, synced.assignment) == (0, b"")  # an empty assignment is an answer too
        assert heartbeat(h, "g", 1, member_id) == ErrorCode.NONE

    run(tmp_path, scenario)


def test_join_group_v3_takes_a_new_member_at_once(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        answer = (await join(h, join_request("g"), version=3)).result()
        assert answer.error_code == 0 and answer.generation_id == 1

    run(tmp_path, scenario)


def test_session_timeouts_outside_the_broker_bounds_are_refused(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        assert (await join(h, join_request("g", session_ms=5))).result().error_code == 26
        too_long = (await join(h, join_request("g", session_ms=2_000_000))).result()
        assert too_long.error_code == ErrorCode.INVALID_SESSION_TIMEOUT

    run(tmp_path, scenario)


def test_members_rebalance_and_followers_get_the_leaders_assignment(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        _leader, follower, generation = await stable_pair(h, "g")
        assert heartbeat(h, "g", generation, follower) == ErrorCode.NONE
        assert heartbeat(h, "g", generation - 1, follower) == ErrorCode.ILLEGAL_GENERATION
        assert heartbeat(h, "g", generation, "stranger") == ErrorCode.UNKNOWN_MEMBER_ID
        assert heartbeat(h, "nope", generation, follower) == ErrorCode.UNKNOWN_MEMBER_ID
        assert (
            await sync(h, "g", generation + 1, follower)
        ).result().error_code == ErrorCode.ILLEGAL_GENERATION
        # In Stable, a late SyncGroup gets the current assignment at once.
        assert (await sync(h, "g", generation, follower)).result().assignment == b"F"

    run(tmp_path, scenario)


def test_a_silent_member_is_removed_after_its_session_and_the_rest_rebalance(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        leader, follower, generation = await stable_pair(h, "g")
        for _ in range(3):
            await h.advance(600)  # the leader heartbeats, the follower does not (session 1000 ms)
            heartbeat(h, "g", generation, leader)
        assert follower not in group_of(h, "g").members
        assert heartbeat(h, "g", generation, leader) == ErrorCode.REBALANCE_IN_PROGRESS
        rejoin = (await join(h, join_request("g", leader))).result()
        assert rejoin.generation_id == generation + 1 and [m.member_id for m in rejoin.members] == [leader]

    run(tmp_path, scenario)


def test_a_member_that_does_not_rejoin_in_time_is_dropped(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        leader, follower, generation = await stable_pair(h, "g")
        # The follower's subscription changes; the leader never rejoins (its heartbeats go on).
        rejoin = await join(h, join_request("g", follower, rebalance_ms=3000, topics=("t", "u")))
        for _ in range(6):
            assert not rejoin.done()
            heartbeat(h, "g", generation, leader)
            await h.advance(500)
        await h.advance(100)
        answer = rejoin.result()
        assert answer.generation_id == generation + 1 and answer.leader == follower
        assert leader not in group_of(h, "g").members

    run(tmp_path, scenario)


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        leader, follower, generation = await stable_pair(h, "g")
        await join(h, join_request("g", follower, topics=("t", "u")))
        leader_join = await join(h, join_request("g", leader))
        generation = leader_join.result().generation_id
        await sync(h, "g", generation, leader, {leader: b"L", follower: b"F"})  # the follower never syncs
        group = group_of(h, "g")
        assert group.state is ClassicGroupState.STABLE
        for _ in range(5):
            heartbeat(h, "g", generation, leader)
            heartbeat(h, "g", generation, follower)
            await h.advance(500)
        assert follower not in group.members
        assert group.state is ClassicGroupState.PREPARING_REBALANCE

    run(tmp_path, scenario)


def test_the_initial_rebalance_waits_for_more_members(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        first = await join_new_member(h, "g", rebalance_ms=10_000)
        await h.advance(2000)
        second = await join_new_member(h, "g", rebalance_ms=10_000)
        await h.advance(2000)  # the delay was extended when the second member came
        assert not first.done() and not second.done()
        await h.advance(3000)
        assert first.result().generation_id == second.result().generation_id == 1
        assert len(first.result().members or second.result().members) == 2

    run(tmp_path, scenario, **{"group.initial.rebalance.delay.ms": "3000"})


def test_a_static_member_rejoining_a_stable_group_keeps_everything_and_fences_its_old_id(
    tmp_path: Path,
) -> None:
    async def scenario(h: Harness) -> None:
        first = (await join(h, join_request("g", instance="a"))).result()
        await sync(h, "g", first.generation_id, first.member_id, {first.member_id: b"A"}, instance="a")
        second = await join(h, join_request("g", instance="b"))
        await join(h, join_request("g", first.member_id, instance="a"))
        generation = second.result().generation_id
        await sync(
            h, "g", generation, first.member_id, {first.member_id: b"A", second.result().member_id: b"B"}, "a"
        )
        # "a" restarts: it rejoins without a member id, within its session.
        again = (await join(h, join_request("g", instance="a"), version=9)).result()
        assert again.error_code == 0 and again.generation_id == generation
        assert again.skip_assignment and again.leader == again.member_id  # the leader keeps its assignment
        assert group_of(h, "g").state is ClassicGroupState.STABLE
        assert heartbeat(h, "g", generation, second.result().member_id, "b") == ErrorCode.NONE  # no rebalance
        assert heartbeat(h, "g", generation, first.member_id, "a") == ErrorCode.FENCED_INSTANCE_ID
        synced = (await sync(h, "g", generation, again.member_id, instance="a")).result()
        assert synced.assignment == b"A"

    run(tmp_path, scenario)


def test_leave_group_answers_each_member_and_an_emptied_group_is_empty(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        leader, follower, generation = await stable_pair(h, "g")
        members = [MemberIdentity(member_id=follower), MemberIdentity(member_id="stranger")]
        error, answers = h.coordinator.leave_group(LeaveGroupRequest(group_id="g"), members)
        assert error == 0 and [a.error_code for a in answers] == [0, ErrorCode.UNKNOWN_MEMBER_ID]
        assert group_of(h, "g").state is ClassicGroupState.PREPARING_REBALANCE
        h.coordinator.leave_group(LeaveGroupRequest(group_id="g"), [MemberIdentity(member_id=leader)])
        group = group_of(h, "g")
        assert group.state is ClassicGroupState.EMPTY and group.generation_id == generation + 1

    run(tmp_path, scenario)


def test_members_must_share_a_protocol_and_the_group_has_a_size_limit(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        await join_new_member(h, "solo")  # supports "range" only
        other = (await join(h, join_request("solo", protocols=("roundrobin",)))).result()
        assert other.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        await stable_pair(h, "g")
        third = (await join(h, join_request("g", protocols=("roundrobin", "range")))).result()
        assert third.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED

    run(tmp_path, scenario, **{"group.max.size": "2"})


def test_a_stable_group_is_loaded_back_and_its_members_keep_their_sessions(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        leader, follower, generation = await stable_pair(h, "g")
        coordinator = await h.restart()
        group = group_of(h, "g")
        assert group.state is ClassicGroupState.STABLE and group.generation_id == generation
        assert {m: x.assignment for m, x in group.members.items()} == {leader: b"L", follower: b"F"}
        assert (
            coordinator.heartbeat(HeartbeatRequest(group_id="g", generation_id=generation, member_id=leader))
            == 0
        )
        for _ in range(4):
            await h.advance(400)
            heartbeat(h, "g", generation, leader)
        assert follower not in group.members  # no heartbeat since the restart: its session ran out

    run(tmp_path, scenario)
