"""KIP-848 consumer groups: joining, reconciliation, fencing, static members, commits, reload."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from odradek.coordinator.consumer_group import ConsumerGroup, MemberState
from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from tests.unit.coordinator.harness import Harness

SESSION = 3000


def run(tmp_path: Path, scenario: Callable[[Harness, uuid.UUID], Awaitable[None]]) -> None:
    async def main() -> None:
        harness = Harness(
            tmp_path,
            **{
                "group.consumer.session.timeout.ms": str(SESSION),
                "group.consumer.min.session.timeout.ms": "1000",
                "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.min.heartbeat.interval.ms": "100",
            },
        )
        await harness.start()
        await harness.create_topic("t", 4)
        topic_id = harness.cluster.topics["t"].topic_id
        try:
            await scenario(harness, topic_id)
        finally:
            harness.stop()

    asyncio.run(main())


def beat(
    h: Harness,
    member: str,
    epoch: int,
    owned: dict[uuid.UUID, set[int]] | None = None,
    *,
    group: str = "g",
    topics: list[str] | None = None,
    instance: str | None = None,
    rebalance_ms: int = 5000,
    assignor: str | None = None,
    version: int = 1,
) -> ConsumerGroupHeartbeatResponse:
    joining = epoch == 0
    request = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        instance_id=instance,
        rebalance_timeout_ms=rebalance_ms if joining else -1,
        subscribed_topic_names=(topics or ["t"]) if joining else topics,
        server_assignor=assignor,
        topic_partitions=[] if joining else _topics(owned),
    )
    return h.coordinator.consumer_group_heartbeat(request, version, "client", "/127.0.0.1")


def _topics(owned: dict[uuid.UUID, set[int]] | None) -> list[TopicPartitions] | None:
    if owned is None:
        return None
    return [TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in owned.items()]


def assigned(response: ConsumerGroupHeartbeatResponse) -> dict[uuid.UUID, set[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


def group_of(h: Harness, group_id: str = "g") -> ConsumerGroup:
    group = h.coordinator.runtime.shard_for(group_id).groups[group_id]
    assert isinstance(group, ConsumerGroup)
    return group


def test_a_second_member_gets_partitions_only_after_the_first_revokes_them(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        a = beat(h, "a", 0)
        assert (a.error_code, a.member_epoch, assigned(a)) == (0, 1, {t: {0, 1, 2, 3}})
        assert a.heartbeat_interval_ms == 500
        b = beat(h, "b", 0)
        assert (b.member_epoch, assigned(b)) == (2, {})  # its partitions are still a's
        a = beat(h, "a", 1, {t: {0, 1, 2, 3}})
        kept = assigned(a)
        assert a.member_epoch == 1 and kept is not None and len(kept[t]) == 2  # revoke two, same epoch
        assert group_of(h).members["a"].state is MemberState.UNREVOKED_PARTITIONS
        a = beat(h, "a", 1, kept)  # revoked
        assert a.member_epoch == 2
        b = beat(h, "b", 2, {})
        assert assigned(b) == {t: {0, 1, 2, 3} - kept[t]}
        assert group_of(h).state_name == "Stable"

    run(tmp_path, scenario)


def test_errors_of_the_heartbeat(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        beat(h, "a", 0)
        assert beat(h, "a", 5, {t: {0, 1, 2, 3}}).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert beat(h, "stranger", 1, {}).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert beat(h, "a", 1, {}, group="nope").error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert beat(h, "", 0).error_code == ErrorCode.INVALID_REQUEST  # v1: the client names itself
        assert beat(h, "c", 0, assignor="sticky").error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
        answer = beat(h, "", 0, version=0)  # v0: the coordinator names it
        assert answer.error_code == 0 and uuid.UUID(answer.member_id or "")

    run(tmp_path, scenario)


def test_group_consumer_max_size_refuses_a_member_beyond_it(tmp_path: Path) -> None:
    async def main() -> None:
        harness = Harness(tmp_path, **{"group.consumer.max.size": "2"})
        await harness.start()
        await harness.create_topic("t", 4)
        try:
            assert beat(harness, "a", 0).error_code == ErrorCode.NONE
            assert beat(harness, "b", 0).error_code == ErrorCode.NONE
            third = beat(harness, "c", 0)
            assert third.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
            assert third.error_message == "The consumer group has reached its maximum capacity of 2 members."
            assert set(group_of(harness).members) == {"a", "b"}
            assert beat(harness, "b", 0).error_code == ErrorCode.NONE  # a member already in is not refused
        finally:
            harness.stop()

    asyncio.run(main())


def test_leaving_and_silent_members_are_removed_and_the_group_rebalances(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        beat(h, "a", 0)
        beat(h, "b", 0)
        epoch = group_of(h).group_epoch
        left = beat(h, "b", -1)
        assert (left.error_code, left.member_epoch) == (0, -1)
        assert set(group_of(h).members) == {"a"} and group_of(h).group_epoch == epoch + 1
        beat(h, "c", 0)
        for _ in range(4):  # c heartbeats, a does not
            await h.advance(1000)
            beat(h, "c", group_of(h).members["c"].member_epoch, None)
        assert set(group_of(h).members) == {"c"}

    run(tmp_path, scenario)


def test_a_member_keeping_revoked_partitions_past_its_rebalance_timeout_is_fenced(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        beat(h, "a", 0, rebalance_ms=2000)
        beat(h, "b", 0)
        beat(h, "a", 1, {t: {0, 1, 2, 3}})  # asked to revoke two; never does
        for _ in range(3):
            await h.advance(1000)
            beat(h, "b", group_of(h).members["b"].member_epoch, {})
        assert "a" not in group_of(h).members

    run(tmp_path, scenario)


def test_a_static_member_steps_out_and_back_without_a_rebalance(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        first = beat(h, "a1", 0, instance="a")
        assert assigned(first) == {t: {0, 1, 2, 3}}
        assert beat(h, "a1", -2, instance="a").member_epoch == -2
        epoch = group_of(h).group_epoch
        back = beat(h, "a2", 0, instance="a")
        assert back.error_code == 0 and assigned(back) == {t: {0, 1, 2, 3}}
        assert group_of(h).group_epoch == epoch and set(group_of(h).members) == {"a2"}
        taken = beat(h, "a3", 0, instance="a")
        assert taken.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
        assert beat(h, "a1", 1, {}, instance="a").error_code == ErrorCode.FENCED_INSTANCE_ID

    run(tmp_path, scenario)


def test_commits_carry_the_member_epoch(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        a = beat(h, "a", 0)

        def commit(epoch: int, version: int = 9) -> dict[tuple[str, int], ErrorCode]:
            context = OffsetCommitContext("g", "a", epoch, None, -1, version)
            return h.coordinator.offsets.commit_offsets(context, [OffsetCommitItem("t", 0, 5, -1, "")])

        assert commit(a.member_epoch) == {("t", 0): 0}
        for epoch, version, code in (
            (a.member_epoch + 1, 9, ErrorCode.STALE_MEMBER_EPOCH),
            (a.member_epoch, 8, ErrorCode.UNSUPPORTED_VERSION),
        ):
            with pytest.raises(KafkaError) as refused:
                commit(epoch, version)
            assert refused.value.error_code == code
        with pytest.raises(KafkaError) as stale:
            h.coordinator.offsets.fetch_offsets("g", None, "a", a.member_epoch + 1)
        assert stale.value.error_code == ErrorCode.STALE_MEMBER_EPOCH
        assert h.coordinator.offsets.fetch_offsets("g", None, "a", a.member_epoch)[0][1][0][1] is not None

    run(tmp_path, scenario)


def test_a_consumer_group_is_loaded_back_described_and_deleted(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID) -> None:
        beat(h, "a", 0)
        beat(h, "b", 0)
        before = group_of(h)
        state = (
            before.group_epoch,
            before.assignment_epoch,
            dict(before.target),
            {m: (x.member_epoch, x.state, x.assigned) for m, x in before.members.items()},
        )
        await h.restart()
        after = group_of(h)
        assert state == (
            after.group_epoch,
            after.assignment_epoch,
            dict(after.target),
            {m: (x.member_epoch, x.state, x.assigned) for m, x in after.members.items()},
        )
        described = h.coordinator.consumer_group_describe("g")
        assert (described.error_code, described.group_epoch, described.assignor_name) == (0, 2, "uniform")
        assert {m.member_id for m in described.members} == {"a", "b"}
        assert all(
            m.client_host == "/127.0.0.1" and m.subscribed_topic_names == ["t"] for m in described.members
        )
        _, listed = h.coordinator.list_groups(set(), {"consumer"})
        assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == [
            ("g", "consumer", "consumer")
        ]
        assert h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NON_EMPTY_GROUP}
        beat(h, "a", -1)
        beat(h, "b", -1)
        assert group_of(h).state_name == "Empty"
        assert h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
        await h.restart()
        assert h.coordinator.list_groups(set(), set())[1] == []

    run(tmp_path, scenario)


def test_a_consumer_groups_session_timeout_and_heartbeat_interval_come_from_its_group_configs(
    tmp_path: Path,
) -> None:
    """KIP-848's GROUP configs consumer.session.timeout.ms and consumer.heartbeat.interval.ms, as Kafka
    4.4's GroupMetadataManager reads them for each member's heartbeat and session: the group's own
    where set, the broker's group.consumer.* else. The broker's were used for every group."""
    configs = {
        "own": {"consumer.session.timeout.ms": str(2 * SESSION), "consumer.heartbeat.interval.ms": "700"}
    }

    async def main() -> None:
        h = Harness(
            tmp_path,
            group_configs=lambda g: configs.get(g, {}),
            **{
                "group.consumer.session.timeout.ms": str(SESSION),
                "group.consumer.min.session.timeout.ms": "1000",
                "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.min.heartbeat.interval.ms": "100",
            },
        )
        await h.start()
        await h.create_topic("t", 4)
        try:
            own = beat(h, "a", 0, group="own")
            plain = beat(h, "a", 0, group="g")
            assert (own.heartbeat_interval_ms, plain.heartbeat_interval_ms) == (700, 500)
            await h.advance(SESSION + 100)
            assert list(group_of(h, "own").members) == ["a"]  # its own timeout is twice the broker's
            assert group_of(h, "g").members == {}
            await h.advance(SESSION)
            assert group_of(h, "own").members == {}
        finally:
            h.stop()

    asyncio.run(main())


def test_a_stored_consumer_group_config_the_brokers_bounds_no_longer_allow_is_capped_to_them(
    tmp_path: Path,
) -> None:
    """Kafka 4.4's GroupConfig.evaluate clamps a stored value to the broker's current
    group.consumer.min/max bounds (they may have changed since it was set)."""
    configs = {"own": {"consumer.heartbeat.interval.ms": "50"}}

    async def main() -> None:
        h = Harness(
            tmp_path,
            group_configs=lambda g: configs.get(g, {}),
            **{
                "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.min.heartbeat.interval.ms": "100",
            },
        )
        await h.start()
        await h.create_topic("t", 4)
        try:
            assert beat(h, "a", 0, group="own").heartbeat_interval_ms == 100
        finally:
            h.stop()

    asyncio.run(main())
