"""KIP-848 regex subscriptions: resolved in the background with RE2, once per topic creation (not at
every heartbeat), only to topics the member may describe, kept in records across a restart, dropped
when no member subscribes to them any more; a pattern RE2 refuses is INVALID_REGULAR_EXPRESSION."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

from odradek.coordinator import consumer_records as cr
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.consumer_group import ConsumerGroup
from odradek.coordinator.consumer_regexes import REFRESH_MIN_INTERVAL_MS, TopicFilter, describe_all
from odradek.coordinator.regex_lane import Requester
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from tests.unit.coordinator.harness import Harness

pytestmark = pytest.mark.timeout(60)
MEMBER = Requester("User:member")


def run(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]]) -> None:
    async def main() -> None:
        harness = Harness(
            tmp_path,
            **{
                "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.min.heartbeat.interval.ms": "100",
            },
        )
        await harness.start()
        await harness.create_topic("orders-eu", 2)
        await harness.create_topic("orders-us", 3)
        await harness.create_topic("payments", 1)
        try:
            await scenario(harness)
        finally:
            harness.stop()

    asyncio.run(main())


def beat(
    h: Harness,
    member: str,
    epoch: int,
    owned: dict[uuid.UUID, set[int]] | None = None,
    *,
    regex: str | None = None,
    describable: TopicFilter = describe_all,
) -> ConsumerGroupHeartbeatResponse:
    joining = epoch == 0
    request = ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member,
        member_epoch=epoch,
        rebalance_timeout_ms=5000 if joining else -1,
        subscribed_topic_regex=regex,
        topic_partitions=[]
        if joining
        else [TopicPartitions(topic_id=t, partitions=sorted(p)) for t, p in (owned or {}).items()],
    )
    return h.coordinator.consumer_group_heartbeat(request, 1, "client", "/127.0.0.1", describable)


def group(h: Harness) -> ConsumerGroup:
    found = h.coordinator.runtime.shard_for("g").groups["g"]
    assert isinstance(found, ConsumerGroup)
    return found


async def resolved(h: Harness) -> None:
    """Let the resolutions under way finish and be written."""
    await h.coordinator.runtime.shard_for("g").consumer.regexes.idle()
    await h.advance(0)


def topic_names(h: Harness, response: ConsumerGroupHeartbeatResponse) -> dict[str, set[int]]:
    assert response.error_code == ErrorCode.NONE, response
    assert response.assignment is not None
    return {
        h.cluster.topics_by_id[tp.topic_id].name: set(tp.partitions)
        for tp in response.assignment.topic_partitions
    }


def ids(h: Harness, names: dict[str, set[int]]) -> dict[uuid.UUID, set[int]]:
    return {h.cluster.topics[name].topic_id: partitions for name, partitions in names.items()}


def count_resolutions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Each pattern resolved (a job of its own in the worker), with how many topics it ran on."""
    calls: list[tuple[str, int]] = []
    original = RegexMatcher.resolve

    async def spy(self: RegexMatcher, group_id: str, pattern: str, names: Sequence[str]) -> frozenset[str]:
        calls.append((pattern, len(names)))
        return await original(self, group_id, pattern, names)

    monkeypatch.setattr(RegexMatcher, "resolve", spy)
    return calls


def test_a_regex_subscription_was_matched_against_every_topic_at_each_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = count_resolutions(monkeypatch)

    async def scenario(h: Harness) -> None:
        joined = beat(h, "m1", 0, regex="orders-.*")
        assert joined.error_code == ErrorCode.NONE
        assert topic_names(h, joined) == {}  # not resolved yet: the member waits, as in Kafka
        await resolved(h)
        assert group(h).resolved_regexes["orders-.*"].topics == {"orders-eu", "orders-us"}
        epoch = group(h).group_epoch
        assigned = beat(h, "m1", joined.member_epoch)
        assert topic_names(h, assigned) == {"orders-eu": {0, 1}, "orders-us": {0, 1, 2}}
        assert assigned.member_epoch == epoch
        for _ in range(5):
            assert beat(h, "m1", epoch, ids(h, topic_names(h, assigned))).error_code == ErrorCode.NONE
            await h.advance(100)
        assert calls == [("orders-.*", 3)]  # one match per topic set, no heartbeat matched

        # A new topic: resolved again once the 10 s since the last resolution have passed.
        await h.create_topic("orders-apac", 1)
        beat(h, "m1", epoch, ids(h, topic_names(h, assigned)))
        await resolved(h)
        assert len(calls) == 1
        await h.advance(REFRESH_MIN_INTERVAL_MS)
        beat(h, "m1", epoch, ids(h, topic_names(h, assigned)))
        await resolved(h)
        assert [count for _, count in calls] == [3, 4]
        assert group(h).resolved_regexes["orders-.*"].topics == {"orders-eu", "orders-us", "orders-apac"}
        assert group(h).group_epoch == epoch + 1
        grown = beat(h, "m1", epoch, ids(h, topic_names(h, assigned)))
        assert topic_names(h, grown) == {"orders-eu": {0, 1}, "orders-us": {0, 1, 2}, "orders-apac": {0}}

    run(tmp_path, scenario)


def test_a_regex_subscription_named_topics_its_member_may_not_describe(tmp_path: Path) -> None:
    def only_orders_eu(names: Collection[str]) -> Collection[str]:
        return [name for name in names if name == "orders-eu"]

    async def scenario(h: Harness) -> None:
        joined = beat(h, "m1", 0, regex=".*", describable=only_orders_eu)
        await resolved(h)
        assert group(h).resolved_regexes[".*"].topics == {"orders-eu"}
        assigned = beat(h, "m1", joined.member_epoch, describable=only_orders_eu)
        assert topic_names(h, assigned) == {"orders-eu": {0, 1}}

    run(tmp_path, scenario)


def test_a_resolved_regex_is_kept_across_a_restart_and_dropped_with_its_last_member(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        joined = beat(h, "m1", 0, regex="orders-.*")
        await resolved(h)
        assigned = beat(h, "m1", joined.member_epoch)
        epoch, owned = assigned.member_epoch, ids(h, topic_names(h, assigned))
        await h.restart()
        assert group(h).resolved_regexes["orders-.*"].topics == {"orders-eu", "orders-us"}
        # The first heartbeat after the load keeps the assignment: no rebalance while it is resolved again.
        again = beat(h, "m1", epoch, owned)
        assert (again.error_code, again.member_epoch, group(h).group_epoch) == (ErrorCode.NONE, epoch, epoch)
        await resolved(h)
        assert group(h).group_epoch == epoch  # the same topics: no epoch bump

        left = h.coordinator.consumer_group_heartbeat(
            ConsumerGroupHeartbeatRequest(group_id="g", member_id="m1", member_epoch=-1), 1, "client", "/h"
        )
        assert left.error_code == ErrorCode.NONE
        assert group(h).resolved_regexes == {}
        await h.restart()
        assert h.coordinator.runtime.shard_for("g").groups["g"].resolved_regexes == {}

    run(tmp_path, scenario)


@pytest.mark.parametrize("pattern", ["(?=orders).*", "(a)\\1", "orders-(", "x{1001}"])
def test_a_subscribed_regex_re2_refuses_is_invalid_regular_expression(tmp_path: Path, pattern: str) -> None:
    async def scenario(h: Harness) -> None:
        request = ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id="m1",
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_regex=pattern,
            topic_partitions=[],
        )
        response = await h.coordinator.consumer_group_heartbeat_committed(
            request, 1, "client", "/h", requester=MEMBER
        )
        assert response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert (response.error_message or "").startswith(
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
        )
        assert "g" not in h.coordinator.runtime.shard_for("g").groups

    run(tmp_path, scenario)


def test_a_regex_resolution_is_written_as_kafkas_record(tmp_path: Path) -> None:
    record = cr.regex_record("g", "orders-.*", frozenset({"b", "a"}), 7, 1234)
    key, value = record.encode()
    assert key == b"\x00\x10" + b"\x00\x01g" + b"\x00\x09orders-.*"
    assert value is not None and value[:2] == b"\x00\x00"  # value version 0 (flexible)


def test_a_heartbeat_checked_a_regex_its_group_already_subscribes_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every heartbeat bringing a regex had it compiled again; Kafka compiles a regex only when a member
    brings one no member of the group subscribes to yet."""
    checked: list[str] = []
    original = RegexMatcher.check

    async def spy(self: RegexMatcher, pattern: str, *rest: Any) -> None:
        checked.append(pattern)
        await original(self, pattern, *rest)

    monkeypatch.setattr(RegexMatcher, "check", spy)

    def joining(member: str) -> ConsumerGroupHeartbeatRequest:
        return ConsumerGroupHeartbeatRequest(
            group_id="g",
            member_id=member,
            member_epoch=0,
            rebalance_timeout_ms=5000,
            subscribed_topic_regex="orders-.*",
            topic_partitions=[],
        )

    async def scenario(h: Harness) -> None:
        beat_committed = h.coordinator.consumer_group_heartbeat_committed
        first = await beat_committed(joining("m1"), 1, "client", "/h", requester=MEMBER)
        assert first.error_code == ErrorCode.NONE
        second = await beat_committed(joining("m2"), 1, "client", "/h", requester=MEMBER)
        assert second.error_code == ErrorCode.NONE
        again = ConsumerGroupHeartbeatRequest(
            group_id="g", member_id="m1", member_epoch=first.member_epoch, subscribed_topic_regex="orders-.*"
        )
        assert (await beat_committed(again, 1, "client", "/h", requester=MEMBER)).error_code == ErrorCode.NONE
        assert checked == ["orders-.*"]

    run(tmp_path, scenario)


def test_a_failed_resolution_was_queued_again_at_every_heartbeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolution that failed (over the worker's CPU budget) left no trace, so Kafka's 10 s minimum
    between resolutions never applied: every heartbeat queued it again, 5 s of the worker's CPU each.
    A regex that failed is tried again only once a topic was created or 10 minutes have passed."""
    calls = count_resolutions(monkeypatch)

    async def scenario(h: Harness) -> None:
        h.coordinator.regexes.limits.cpu_seconds = 1e-6  # stands for a regex that costs more than 5 s
        joined = beat(h, "m1", 0, regex="orders-.*")
        await resolved(h)
        for _ in range(5):
            beat(h, "m1", joined.member_epoch)
            await resolved(h)
            await h.advance(100)
        assert len(calls) == 1
        await h.advance(REFRESH_MIN_INTERVAL_MS)
        beat(h, "m1", joined.member_epoch)
        await resolved(h)
        assert len(calls) == 1  # no topic since: the same names would cost the same
        await h.create_topic("orders-apac", 1)
        h.coordinator.regexes.limits.cpu_seconds = 5.0
        beat(h, "m1", joined.member_epoch)
        await resolved(h)
        assert calls == [("orders-.*", 3), ("orders-.*", 4)]
        assert group(h).resolved_regexes["orders-.*"].topics == {"orders-eu", "orders-us", "orders-apac"}

    run(tmp_path, scenario)


def test_one_costly_regex_kept_the_groups_other_regexes_unresolved(tmp_path: Path) -> None:
    """A group's regexes shared one budget: one costly pattern (a member's) left every other member's
    unresolved too. Each is a job of its own now, held to the budget alone."""
    costly = "\\pL*" * 4000  # valid; RE2 takes ~0.3 s of CPU to compile it

    async def scenario(h: Harness) -> None:
        h.coordinator.regexes.limits.cpu_seconds = 0.1
        joined = beat(h, "m1", 0, regex="orders-.*")
        await resolved(h)
        assigned = beat(h, "m1", joined.member_epoch)
        assert topic_names(h, assigned) == {"orders-eu": {0, 1}, "orders-us": {0, 1, 2}}
        beat(h, "m2", 0, regex=costly)
        await h.create_topic("orders-apac", 1)
        await h.advance(REFRESH_MIN_INTERVAL_MS + 1)
        again = beat(h, "m1", assigned.member_epoch, ids(h, topic_names(h, assigned)))
        assert again.error_code == ErrorCode.NONE
        await resolved(h)  # both regexes, each on its own budget
        assert group(h).resolved_regexes["orders-.*"].topics == {"orders-eu", "orders-us", "orders-apac"}
        assert costly not in group(h).resolved_regexes

    run(tmp_path, scenario)
