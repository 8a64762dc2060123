"""KIP-932 share groups in the group coordinator: joining, assignment, epochs, leaving, session timeouts,
the share-group state initialised before a partition is assigned, the group id namespace, reload."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from odradek.coordinator.share_group import ShareGroup
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.protocol.messages.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from tests.support.share_persister import InMemorySharePersister
from tests.unit.coordinator.harness import Harness

SESSION = 3000
SHARE_ON = {
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "group.share.session.timeout.ms": str(SESSION),
    "group.share.min.session.timeout.ms": str(SESSION),
    "group.share.heartbeat.interval.ms": "500",
    "group.share.min.heartbeat.interval.ms": "500",
}


def run(
    tmp_path: Path,
    scenario: Callable[[Harness, uuid.UUID, InMemorySharePersister], Awaitable[None]],
    **overrides: str,
) -> None:
    async def main() -> None:
        persister = InMemorySharePersister()
        harness = Harness(tmp_path, share_persister=persister, **{**SHARE_ON, **overrides})
        await harness.start()
        await harness.create_topic("t", 3)
        topic_id = harness.cluster.topics["t"].topic_id
        try:
            await scenario(harness, topic_id, persister)
        finally:
            harness.stop()

    asyncio.run(main())


async def beat(
    h: Harness, member: str, epoch: int, *, group: str = "sg", topics: list[str] | None = None
) -> ShareGroupHeartbeatResponse:
    request = ShareGroupHeartbeatRequest(
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        subscribed_topic_names=(topics or ["t"]) if epoch == 0 else topics,
    )
    return await h.coordinator.share.heartbeat(request, "client", "/127.0.0.1")


def assigned(response: ShareGroupHeartbeatResponse) -> dict[uuid.UUID, set[int]] | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


def share_group(h: Harness, group_id: str = "sg") -> ShareGroup:
    group = h.coordinator.runtime.shard_for(group_id).groups[group_id]
    assert isinstance(group, ShareGroup)
    return group


def test_a_partition_is_assigned_only_after_its_share_group_state_is_initialized(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        first = await beat(h, "a", 0)
        assert (first.error_code, first.member_epoch, assigned(first)) == (0, 1, {})
        assert first.heartbeat_interval_ms == 500
        assert sorted(k.partition for k in persister.states) == [0, 1, 2]
        assert all(k == SharePartitionKey("sg", t, k.partition) for k in persister.states)
        second = await beat(h, "a", 1)
        assert (second.member_epoch, assigned(second)) == (2, {t: {0, 1, 2}})

    run(tmp_path, scenario)


def test_share_group_members_split_the_partitions_instead_of_each_getting_all(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        a = await beat(h, "a", 1)
        assert assigned(a) == {t: {0, 1, 2}}
        b = await beat(h, "b", 0)
        assert b.member_epoch == 3
        a = await beat(h, "a", a.member_epoch)
        assert a.member_epoch == 3
        a_got, b_got = assigned(a), assigned(b)
        assert a_got is not None and b_got is not None
        assert a_got[t] | b_got[t] == {0, 1, 2} and not a_got[t] & b_got[t]
        assert sorted([len(a_got[t]), len(b_got[t])]) == [1, 2]
        assert share_group(h).state_name == "Stable"
        assert [name for name, _ in persister.calls].count("initialize") == 3  # once per partition

    run(tmp_path, scenario)


def test_share_group_members_outnumbering_partitions_share_them(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "m0", 0)
        await beat(h, "m0", 1)
        epochs = {"m0": 1}
        for name in ("m1", "m2", "m3"):
            epochs[name] = (await beat(h, name, 0)).member_epoch
        got = {}
        for name in epochs:
            answer = await beat(h, name, epochs[name])
            got[name] = share_group(h).members[name].assigned.get(t, frozenset())
            assert answer.error_code == 0
        # Four members, three partitions: each partition goes to ceil(4 / 3) = 2 members.
        counts = sorted(sum(p in g for g in got.values()) for p in range(3))
        assert counts == [2, 2, 2]
        assert all(got.values())

    run(tmp_path, scenario)


def test_a_partition_whose_state_initialization_fails_is_not_assigned_and_retried(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        persister.refuse(SharePartitionKey("sg", t, 1), ErrorCode.COORDINATOR_NOT_AVAILABLE)
        await beat(h, "a", 0)
        a = await beat(h, "a", 1)
        assert assigned(a) == {t: {0, 2}}
        persister.refusals.clear()
        a = await beat(h, "a", a.member_epoch)  # initialises partition 1 before answering
        assert assigned(a) == {t: {0, 1, 2}}

    run(tmp_path, scenario)


def test_errors_of_the_share_group_heartbeat(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        assert (await beat(h, "a", 7)).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert (await beat(h, "stranger", 1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await beat(h, "a", 1, group="nope")).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert (await beat(h, "", 0)).error_code == ErrorCode.INVALID_REQUEST
        assert (await beat(h, "a", -2)).error_code == ErrorCode.INVALID_REQUEST
        no_topics = ShareGroupHeartbeatRequest(group_id="sg", member_id="c", member_epoch=0)
        answer = await h.coordinator.share.heartbeat(no_topics, "client", "/127.0.0.1")
        assert answer.error_code == ErrorCode.INVALID_REQUEST
        assert answer.error_message == "SubscribedTopicNames must be set in first request."
        empty_group = ShareGroupHeartbeatRequest(group_id="", member_id="c", member_epoch=0)
        answer = await h.coordinator.share.heartbeat(empty_group, "client", "/127.0.0.1")
        assert answer.error_code == ErrorCode.INVALID_REQUEST

    run(tmp_path, scenario)


def test_a_share_group_is_full_at_group_share_max_size(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        assert (await beat(h, "a", 0)).error_code == ErrorCode.NONE
        assert (await beat(h, "b", 0)).error_code == ErrorCode.NONE
        assert (await beat(h, "c", 0)).error_code == ErrorCode.GROUP_MAX_SIZE_REACHED

    run(tmp_path, scenario, **{"group.share.max.size": "2"})


def test_a_member_leaving_with_epoch_minus_one_is_removed_and_the_group_epoch_moves(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        await beat(h, "b", 0)
        epoch = share_group(h).group_epoch
        left = await beat(h, "a", -1)
        assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)
        assert list(share_group(h).members) == ["b"]
        assert share_group(h).group_epoch == epoch + 1
        assert (await beat(h, "a", -1)).error_code == ErrorCode.UNKNOWN_MEMBER_ID

    run(tmp_path, scenario)


def test_a_silent_share_member_is_removed_after_the_session_timeout(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        b = await beat(h, "b", 0)
        await h.advance(SESSION - 100)
        await beat(h, "b", b.member_epoch)
        await h.advance(200)
        assert list(share_group(h).members) == ["b"]
        assert share_group(h).state_name == "Stable"
        await h.advance(SESSION)
        assert share_group(h).state_name == "Empty"

    run(tmp_path, scenario)


def test_a_share_groups_session_timeout_and_heartbeat_interval_come_from_its_group_configs(
    tmp_path: Path,
) -> None:
    configs = {"own": {"share.session.timeout.ms": str(2 * SESSION), "share.heartbeat.interval.ms": "700"}}

    async def main() -> None:
        persister = InMemorySharePersister()
        h = Harness(
            tmp_path, share_persister=persister, group_configs=lambda g: configs.get(g, {}), **SHARE_ON
        )
        await h.start()
        await h.create_topic("t", 1)
        try:
            own = await beat(h, "a", 0, group="own")
            plain = await beat(h, "a", 0, group="sg")
            assert (own.heartbeat_interval_ms, plain.heartbeat_interval_ms) == (700, 500)
            await h.advance(SESSION + 100)
            assert list(share_group(h, "own").members) == ["a"]  # its own timeout is twice the broker's
            assert share_group(h, "sg").state_name == "Empty"
            await h.advance(SESSION)
            assert share_group(h, "own").state_name == "Empty"
        finally:
            h.stop()

    asyncio.run(main())


def test_a_share_group_is_replayed_from_consumer_offsets_on_reload(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        a = await beat(h, "a", 1)
        before = share_group(h)
        snapshot = (before.group_epoch, before.assignment_epoch, dict(before.initialized), before.members)
        await h.restart()
        after = share_group(h)
        assert (after.group_epoch, after.assignment_epoch, after.initialized, after.members) == snapshot
        assert after.members["a"].assigned == {t: frozenset({0, 1, 2})}
        a = await beat(h, "a", a.member_epoch)
        assert a.error_code == ErrorCode.NONE
        assert [name for name, _ in persister.calls].count("initialize") == 3  # not initialised again
        await h.advance(SESSION + 1)  # sessions restart on load: a silent member still goes
        assert share_group(h).is_empty

    run(tmp_path, scenario)


def test_group_types_share_one_namespace(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        consumer = ConsumerGroupHeartbeatRequest(
            group_id="sg",
            member_id="c",
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_names=["t"],
            topic_partitions=[],
        )
        answer = h.coordinator.consumer_group_heartbeat(consumer, 1, "client", "/127.0.0.1")
        assert answer.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        consumer.group_id = "cg"
        assert h.coordinator.consumer_group_heartbeat(consumer, 1, "client", "/127.0.0.1").error_code == 0
        refused = await beat(h, "x", 0, group="cg")
        assert refused.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert refused.error_message == "Group cg is not a share group."
        commit = OffsetCommitContext("sg", -1, "", None, 9, -1)
        try:
            h.coordinator.offsets.commit_offsets(commit, [OffsetCommitItem("t", 0, 1, -1, None)])
        except KafkaError as error:
            assert error.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        else:
            raise AssertionError("an offset commit to a share group was accepted")

    run(tmp_path, scenario)


def test_share_groups_in_list_describe_and_delete_groups(tmp_path: Path) -> None:
    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        await beat(h, "a", 1)
        _, listed = h.coordinator.list_groups(set(), set())
        assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
            ("sg", "share", "Stable", "share")
        ]
        assert h.coordinator.list_groups(set(), {"consumer"})[1] == []
        described = h.coordinator.share.describe("sg")
        state = (described.error_code, described.group_state, described.assignor_name)
        assert state == (0, "Stable", "simple")
        member = described.members[0]
        assert (member.member_id, member.subscribed_topic_names, member.client_id) == ("a", ["t"], "client")
        [topic] = member.assignment.topic_partitions
        assert (topic.topic_id, topic.topic_name, topic.partitions) == (t, "t", [0, 1, 2])
        assert h.coordinator.describe_group("sg", 6).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert h.coordinator.share.describe("nope").error_code == ErrorCode.GROUP_ID_NOT_FOUND
        assert h.coordinator.delete_groups(["sg"]) == {"sg": ErrorCode.NON_EMPTY_GROUP}
        await beat(h, "a", -1)
        persister.refuse(SharePartitionKey("sg", t, 1), ErrorCode.COORDINATOR_NOT_AVAILABLE)
        assert await h.coordinator.share.delete_state(["sg"]) == {"sg": ErrorCode.COORDINATOR_NOT_AVAILABLE}
        persister.refusals.clear()
        assert await h.coordinator.share.delete_state(["sg", "nope"]) == {}
        assert persister.states == {}  # the share coordinators' state goes first
        assert h.coordinator.delete_groups(["sg"]) == {"sg": ErrorCode.NONE}
        assert "sg" not in h.coordinator.runtime.shard_for("sg").groups
        await h.restart()
        assert "sg" not in h.coordinator.runtime.shard_for("sg").groups  # the tombstones replay too

    run(tmp_path, scenario)


def test_share_group_heartbeats_are_refused_without_the_share_coordinator(tmp_path: Path) -> None:
    async def main() -> None:
        harness = Harness(tmp_path, **SHARE_ON)
        await harness.start()
        try:
            answer = await beat(harness, "a", 0)
            assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
        finally:
            harness.stop()

    asyncio.run(main())


def test_a_deleted_topic_leaves_the_share_groups_initialized_partitions(tmp_path: Path) -> None:
    """Kafka 4.4's maybeCleanupShareGroupState on a topic deletion: every share group forgets the
    topic's partitions in its state-partition metadata (a new record), so that DescribeShareGroupOffsets
    no longer lists the deleted topic and a restart does not bring it back. They were kept for good."""

    async def scenario(h: Harness, t: uuid.UUID, persister: InMemorySharePersister) -> None:
        await beat(h, "a", 0)
        await beat(h, "a", 1)
        offsets = h.coordinator.share.offsets
        assert offsets is not None
        assert [topic.name for topic in await offsets.describe("sg", None)] == ["t"]
        await h.topics.delete_topic("t")
        h.coordinator.share.topics_deleted({t})
        await h.advance(0)
        assert share_group(h).initialized == {}
        assert await offsets.describe("sg", None) == []
        await h.restart()
        assert share_group(h).initialized == {}

    run(tmp_path, scenario)
