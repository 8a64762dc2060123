"""The coordinators' writes as acks=all appends: refused with nothing appended under
min.insync.replicas, errors mapped for the client as Kafka's coordinators map them, and offset commits
applied to memory only once the in-sync replicas hold them (a failed commit leaves no trace)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from odradek.coordinator.regex_lane import Requester
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.write_errors import (
    group_metadata_error,
    offset_commit_error,
    transaction_log_error,
)
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition
from tests.support.held_isr import HeldIsr
from tests.support.short_isr import ShortIsr
from tests.unit.coordinator.harness import Harness, join_new_member, settle, start

E = ErrorCode


def run(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]]) -> None:
    async def main() -> None:
        harness = Harness(tmp_path)
        await harness.start()
        await harness.create_topic("t", 2)
        try:
            await scenario(harness)
        finally:
            harness.stop()

    asyncio.run(main())


def offsets_log(h: Harness) -> Log:
    """The (single) `__consumer_offsets` partition, led with a follower in its ISR that never fetches,
    so its high watermark is moved by the test only, as a leader's with followers: by their fetches."""
    hosted = h.replicas.leading[(OFFSETS_TOPIC, 0)]
    h.replicas.apply_leadership(dataclasses.replace(hosted, replicas=[1, 2], isr=[1, 2]))
    found = h.logs.get_log(OFFSETS_TOPIC, 0)
    assert found is not None
    assert not found.auto_high_watermark
    return found


def commit(h: Harness, group: str, offset: int) -> dict[tuple[str, int], ErrorCode]:
    context = OffsetCommitContext(group, "", -1, None, -1, 8)
    return h.coordinator.offsets.commit_offsets(context, [OffsetCommitItem("t", 0, offset, 3, "")])


def fetched(h: Harness, group: str) -> dict[tuple[str, int], int]:
    return {
        (t, p): o.offset
        for t, parts in h.coordinator.offsets.fetch_offsets(group, None)
        for p, o in parts
        if o
    }


def test_an_offset_commit_is_fetched_only_once_the_in_sync_replicas_hold_it(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        assert commit(h, "g", 5) == {("t", 0): E.NONE}
        assert log.log_end_offset == 1  # appended
        assert fetched(h, "g") == {}  # but not on the followers yet: a failover would lose it
        log.update_high_watermark(1)
        assert fetched(h, "g") == {("t", 0): 5}

    run(tmp_path, scenario)


def test_a_commit_that_never_reaches_the_isr_leaves_the_previous_offset_in_place(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        commit(h, "g", 5)
        log.update_high_watermark(log.log_end_offset)
        commit(h, "g", 9)  # times out waiting for the followers: answered with an error
        assert fetched(h, "g") == {("t", 0): 5}
        # the leader resigns (its log may be truncated by the next leader): nothing of it stays
        h.coordinator.runtime.resign(0)
        assert not h.coordinator.runtime.shards

    run(tmp_path, scenario)


def test_commits_become_visible_in_log_order_as_the_high_watermark_passes_each(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        commit(h, "g", 5)
        commit(h, "g", 7)
        log.update_high_watermark(1)
        assert fetched(h, "g") == {("t", 0): 5}
        log.update_high_watermark(2)
        assert fetched(h, "g") == {("t", 0): 7}

    run(tmp_path, scenario)


def test_an_offset_commit_under_min_insync_replicas_appends_nothing_and_is_coordinator_not_available(
    tmp_path: Path,
) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        h.coordinator.runtime.leadership = ShortIsr(h.coordinator.runtime.leadership)
        assert commit(h, "g", 5) == {("t", 0): E.COORDINATOR_NOT_AVAILABLE}
        assert log.log_end_offset == 0
        log.update_high_watermark(0)
        assert fetched(h, "g") == {}

    run(tmp_path, scenario)


def test_a_sync_group_under_min_insync_replicas_stores_no_assignment_and_is_coordinator_not_available(
    tmp_path: Path,
) -> None:
    async def scenario(h: Harness) -> None:
        answer = (await join_new_member(h, "g", session_ms=1_800_000)).result()
        log = offsets_log(h)
        end = log.log_end_offset
        h.coordinator.runtime.leadership = ShortIsr(h.coordinator.runtime.leadership)
        request = SyncGroupRequest(
            group_id="g",
            generation_id=answer.generation_id,
            member_id=answer.member_id,
            assignments=[SyncGroupRequestAssignment(member_id=answer.member_id, assignment=b"a")],
        )
        synced = start(h.coordinator.sync_group(request))
        await settle()
        assert synced.result().error_code == E.COORDINATOR_NOT_AVAILABLE
        assert log.log_end_offset == end

    run(tmp_path, scenario)


def test_offset_commit_errors_are_mapped_as_kafkas_group_coordinator_maps_them() -> None:
    assert offset_commit_error(E.NOT_ENOUGH_REPLICAS) is E.COORDINATOR_NOT_AVAILABLE
    assert offset_commit_error(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND) is E.COORDINATOR_NOT_AVAILABLE
    assert offset_commit_error(E.UNKNOWN_TOPIC_OR_PARTITION) is E.COORDINATOR_NOT_AVAILABLE
    assert offset_commit_error(E.NOT_LEADER_OR_FOLLOWER) is E.NOT_COORDINATOR
    assert offset_commit_error(E.KAFKA_STORAGE_ERROR) is E.NOT_COORDINATOR
    assert offset_commit_error(E.REQUEST_TIMED_OUT) is E.REQUEST_TIMED_OUT  # passed through
    assert offset_commit_error(E.MESSAGE_TOO_LARGE) is E.INVALID_COMMIT_OFFSET_SIZE
    assert offset_commit_error(E.RECORD_LIST_TOO_LARGE) is E.INVALID_COMMIT_OFFSET_SIZE


def test_group_metadata_errors_are_mapped_as_kafkas_store_group_maps_them() -> None:
    assert group_metadata_error(E.NOT_ENOUGH_REPLICAS) is E.COORDINATOR_NOT_AVAILABLE
    assert group_metadata_error(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND) is E.COORDINATOR_NOT_AVAILABLE
    assert group_metadata_error(E.NOT_LEADER_OR_FOLLOWER) is E.NOT_COORDINATOR
    assert group_metadata_error(E.REQUEST_TIMED_OUT) is E.REBALANCE_IN_PROGRESS
    assert group_metadata_error(E.MESSAGE_TOO_LARGE) is E.UNKNOWN_SERVER_ERROR


def test_transaction_log_errors_are_mapped_as_kafkas_transaction_state_manager_maps_them() -> None:
    assert transaction_log_error(E.NOT_ENOUGH_REPLICAS) is E.COORDINATOR_NOT_AVAILABLE
    assert transaction_log_error(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND) is E.COORDINATOR_NOT_AVAILABLE
    assert transaction_log_error(E.REQUEST_TIMED_OUT) is E.COORDINATOR_NOT_AVAILABLE
    assert transaction_log_error(E.NOT_LEADER_OR_FOLLOWER) is E.NOT_COORDINATOR
    assert transaction_log_error(E.KAFKA_STORAGE_ERROR) is E.NOT_COORDINATOR
    assert transaction_log_error(E.RECORD_LIST_TOO_LARGE) is E.UNKNOWN_SERVER_ERROR
    assert transaction_log_error(E.CONCURRENT_TRANSACTIONS) is E.CONCURRENT_TRANSACTIONS


class Followers:
    """The ISR as the runtime sees it: each write waits until the test answers it."""

    def __init__(self) -> None:
        self.waiting: list[asyncio.Future[ErrorCode]] = []

    async def replicated(
        self, _partition: TopicPartition, _required_offset: int, _timeout_ms: int
    ) -> ErrorCode:
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        return await future


async def _sync_leader_alone(h: Harness, followers: Followers) -> asyncio.Task[Any]:
    answer = (await join_new_member(h, "g", session_ms=1_800_000)).result()
    offsets_log(h)  # a follower in the ISR: the assignment's write waits for it
    h.coordinator.runtime.leadership = HeldIsr(h.coordinator.runtime.leadership, followers.replicated)
    request = SyncGroupRequest(
        group_id="g",
        generation_id=answer.generation_id,
        member_id=answer.member_id,
        assignments=[SyncGroupRequestAssignment(member_id=answer.member_id, assignment=b"a")],
    )
    synced = start(h.coordinator.sync_group(request))
    await settle()
    return synced


def test_a_sync_group_is_answered_only_once_the_isr_holds_the_assignment(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        followers = Followers()
        synced = await _sync_leader_alone(h, followers)
        assert not synced.done()  # appended, not yet on the followers
        followers.waiting.pop(0).set_result(E.NONE)
        await settle()
        assert synced.result().error_code == E.NONE and synced.result().assignment == b"a"

    run(tmp_path, scenario)


def test_a_sync_group_whose_assignment_times_out_is_rebalance_in_progress(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        followers = Followers()
        synced = await _sync_leader_alone(h, followers)
        followers.waiting.pop(0).set_result(E.REQUEST_TIMED_OUT)
        await settle()
        assert synced.result().error_code == E.REBALANCE_IN_PROGRESS  # as Kafka's storeGroup

    run(tmp_path, scenario)


def test_an_offset_with_a_newer_commit_on_its_way_to_the_isr_does_not_expire(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        log = offsets_log(h)
        commit(h, "g", 5)
        log.update_high_watermark(log.log_end_offset)
        h.clock.now_ms += h.coordinator.settings.offsets_retention_ms + 1
        commit(h, "g", 9)  # not on the followers yet
        assert h.coordinator.offsets.expire_offsets() == 0
        log.update_high_watermark(log.log_end_offset)
        assert fetched(h, "g") == {("t", 0): 9}

    run(tmp_path, scenario)


def _joining_heartbeat() -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id="kip848",
        member_id="m1",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )


def test_a_consumer_group_heartbeat_is_answered_once_the_isr_holds_what_it_wrote(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        followers = Followers()
        h.coordinator.runtime.leadership = HeldIsr(h.coordinator.runtime.leadership, followers.replicated)
        beating = start(
            h.coordinator.consumer_group_heartbeat_committed(
                _joining_heartbeat(), 1, "c", "/h", requester=Requester("User:c")
            )
        )
        await settle()
        assert not beating.done()  # the member's epoch and assignment are appended, not yet replicated
        followers.waiting.pop(0).set_result(E.NONE)
        await settle()
        answer = beating.result()
        assert answer.error_code == E.NONE and answer.member_epoch == 1

    run(tmp_path, scenario)


def test_a_consumer_group_heartbeat_whose_write_times_out_is_coordinator_not_available(
    tmp_path: Path,
) -> None:
    async def scenario(h: Harness) -> None:
        followers = Followers()
        h.coordinator.runtime.leadership = HeldIsr(h.coordinator.runtime.leadership, followers.replicated)
        beating = start(
            h.coordinator.consumer_group_heartbeat_committed(
                _joining_heartbeat(), 1, "c", "/h", requester=Requester("User:c")
            )
        )
        await settle()
        followers.waiting.pop(0).set_result(E.REQUEST_TIMED_OUT)
        await settle()
        assert beating.result().error_code == E.COORDINATOR_NOT_AVAILABLE

    run(tmp_path, scenario)
