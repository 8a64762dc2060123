"""Groups that share a topic, static members, mixed clients and cooperative rebalancing."""

from __future__ import annotations

import time

import pytest

from tests.compat.groups.group_clients import (
    Member,
    create_topic,
    member_errors,
    produce,
    start_members,
    wait_for_split,
)
from tests.support.broker_process import BrokerProcess


def test_two_groups_on_one_topic_each_receive_everything(group_broker: BrokerProcess) -> None:
    topic = "two-groups"
    create_topic(group_broker.bootstrap, topic, 6)
    produce(group_broker.bootstrap, topic, 300, 6)
    first = start_members("kafka-python", group_broker.bootstrap, "two-groups-a", topic, 2)
    second = start_members("confluent", group_broker.bootstrap, "two-groups-b", topic, 2)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (_values(first) < 300 or _values(second) < 300):
            time.sleep(0.05)
    finally:
        for member in first + second:
            member.stop()
    assert _values(first) == 300 and _values(second) == 300
    assert not member_errors(first + second)


def _values(members: list[Member]) -> int:
    return len({value for member in members for _, _, value in member.consumed})


@pytest.mark.parametrize(
    ("client", "instance_option", "session"),
    [
        ("kafka-python", "group_instance_id", {"session_timeout_ms": 10_000}),
        ("confluent", "group.instance.id", {"session.timeout.ms": 10_000}),
        ("confluent-consumer", "group.instance.id", {}),  # the broker's group.consumer.session.timeout.ms
    ],
)
def test_a_restarted_static_member_rejoins_without_a_rebalance(
    group_broker: BrokerProcess, client: str, instance_option: str, session: dict[str, int]
) -> None:
    topic, group = f"static-{client}", f"static-{client}"
    create_topic(group_broker.bootstrap, topic, 6)
    [stayer] = start_members(
        client, group_broker.bootstrap, group, topic, 1, **{instance_option: "stayer"}, **session
    )
    [mover] = start_members(
        client, group_broker.bootstrap, group, topic, 1, **{instance_option: "mover"}, **session
    )
    try:
        before = wait_for_split([stayer.assignment, mover.assignment], 6)
        revoked_before = list(stayer.revoked)
        mover.stop()  # a static member does not send LeaveGroup when it closes
        [mover] = start_members(
            client, group_broker.bootstrap, group, topic, 1, **{instance_option: "mover"}, **session
        )
        after = wait_for_split([stayer.assignment, mover.assignment], 6)
        time.sleep(1)
        assert after == before, "the static member did not get its partitions back"
        assert stayer.revoked == revoked_before, "the other member went through a rebalance"
    finally:
        stayer.stop()
        mover.stop()
    assert not member_errors([stayer, mover])


def test_kafka_python_confluent_and_aiokafka_members_share_one_group(group_broker: BrokerProcess) -> None:
    topic, group = "mixed", "mixed"
    create_topic(group_broker.bootstrap, topic, 6)
    members = [
        *start_members("kafka-python", group_broker.bootstrap, group, topic, 1),
        *start_members("confluent", group_broker.bootstrap, group, topic, 1),
        *start_members("aiokafka", group_broker.bootstrap, group, topic, 1),
    ]
    try:
        split = wait_for_split([m.assignment for m in members], 6, errors=lambda: member_errors(members))
        assert sorted(len(a) for a in split) == [2, 2, 2]
        leaver = members.pop(0)
        leaver.stop()
        wait_for_split([m.assignment for m in members], 6)
    finally:
        for member in members:
            member.stop()
    assert not member_errors(members)


# kafka-python 3.0.12's cooperative-sticky is left out: now and then its leader stops after a
# successful SyncGroup (no heartbeat, no assignment callback; the broker's answer is in its debug log),
# and the group rebalances it away after its session timeout. librdkafka's is the reference here.
@pytest.mark.parametrize(
    ("client", "option", "value"), [("confluent", "partition.assignment.strategy", "cooperative-sticky")]
)
def test_cooperative_rebalancing_moves_only_what_it_must(
    group_broker: BrokerProcess, client: str, option: str, value: object
) -> None:
    topic, group = f"cooperative-{client}", f"cooperative-{client}"
    create_topic(group_broker.bootstrap, topic, 6)
    members = start_members(client, group_broker.bootstrap, group, topic, 2, **{option: value})
    try:
        first = wait_for_split([m.assignment for m in members], 6, errors=lambda: member_errors(members))
        revocations = [len(m.revoked) for m in members]
        members += start_members(client, group_broker.bootstrap, group, topic, 1, **{option: value})
        second = wait_for_split([m.assignment for m in members], 6, errors=lambda: member_errors(members))
        assert sorted(len(a) for a in second) == [2, 2, 2]
        # Incremental: the first two kept what they still own, and only gave up what moved.
        for old, new, member, seen in zip(first, second, members, revocations, strict=False):
            assert new <= old
            assert all(revoked <= old - new for revoked in member.revoked[seen:])
    finally:
        for member in members:
            member.stop()
    assert not member_errors(members)
