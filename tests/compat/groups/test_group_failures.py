"""Members killed with SIGKILL (no LeaveGroup): their partitions move within the session timeout, and a
restarted member resumes from the committed offsets (nothing skipped, duplicates only after them)."""

from __future__ import annotations

import time

import pytest

from tests.compat.groups.group_clients import (
    SESSION_TIMEOUT_MS,
    committed_offsets,
    create_topic,
    produce,
    start_members,
    wait_for_split,
)
from tests.compat.groups.processes import MemberProcess
from tests.support.broker_process import BrokerProcess

KILL_CLIENTS = ("kafka-python", "confluent", "confluent-consumer", "aiokafka")


@pytest.mark.parametrize("client", KILL_CLIENTS)
def test_killed_member_is_rebalanced_away_within_its_session(
    group_broker: BrokerProcess, client: str
) -> None:
    topic, group = f"killed-{client}", f"killed-{client}"
    create_topic(group_broker.bootstrap, topic, 6)
    with MemberProcess(client, group_broker.bootstrap, group, topic) as doomed:
        members = start_members(client, group_broker.bootstrap, group, topic, 2)
        try:
            wait_for_split([doomed.assignment, *(m.assignment for m in members)], 6)
            doomed.kill()
            killed_at = time.monotonic()
            wait_for_split(
                [m.assignment for m in members], 6, timeout=SESSION_TIMEOUT_MS / 1000 + 15, steady=0.5
            )
            # Session timeout, then one rebalance (the survivors rejoin at their next heartbeat).
            assert time.monotonic() - killed_at < SESSION_TIMEOUT_MS / 1000 + 8
        finally:
            for member in members:
                member.stop()


@pytest.mark.parametrize("client", KILL_CLIENTS)
def test_restarted_member_resumes_from_the_committed_offsets(
    group_broker: BrokerProcess, client: str
) -> None:
    topic, group = f"resume-{client}", f"resume-{client}"
    create_topic(group_broker.bootstrap, topic, 3)
    produce(group_broker.bootstrap, topic, 600, 3)
    with MemberProcess(client, group_broker.bootstrap, group, topic, "25") as first:
        first.wait_consumed(250)
        first.kill()
    # The child may die between a commit and printing it: the broker's answer is what counts, once
    # a commit the child sent just before dying has been handled.
    time.sleep(0.5)
    committed = committed_offsets(group_broker.bootstrap, group, topic, 3)
    assert all(committed.get(p, 0) >= o for p, o in first.committed.items())
    assert committed, "the first member committed nothing"
    [second] = start_members(client, group_broker.bootstrap, group, topic, 1)

    def caught_up() -> bool:
        # Everything seen by one or the other, and each partition's uncommitted tail read again to its
        # end (the first member may have read past its last commit: those records come back).
        if len(_seen(first.consumed, second.consumed)) < 600:
            return False
        last: dict[int, int] = {}
        for p, o, _ in list(second.consumed):
            last[p] = max(o, last.get(p, -1))
        return all(committed.get(p, 0) >= 200 or last.get(p) == 199 for p in range(3))

    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not caught_up():
            time.sleep(0.05)
    finally:
        second.stop()
    resumed = [(p, o) for p, o, _ in second.consumed]
    assert len(_seen(first.consumed, resumed)) == 600, "messages were skipped"
    for partition in range(3):
        offsets = [o for p, o in resumed if p == partition]
        start = committed.get(partition, 0)
        if start < 200:  # 200 messages per partition: a fully committed one has nothing left to read
            assert offsets, f"partition {partition} not consumed after the restart"
            assert offsets[0] == start, f"partition {partition} did not resume at its commit"
        else:
            assert not offsets
    duplicates = set(first.consumed) & set(resumed)
    assert all(o >= committed.get(p, 0) for p, o in duplicates), "a committed message was delivered again"


def _seen(*consumed: list[tuple[int, int]]) -> set[tuple[int, int]]:
    return {pair for part in consumed for pair in part}
