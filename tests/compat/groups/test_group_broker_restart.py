"""Members keep consuming, and keep their committed positions, across a broker SIGKILL and restart."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.compat.groups.group_clients import (
    GROUP_BROKER_OVERRIDES,
    Member,
    committed_offsets,
    create_topic,
    member_errors,
    produce,
    start_members,
    wait_for_split,
)
from tests.support.broker_process import BrokerProcess


@pytest.mark.parametrize("client", ["kafka-python", "confluent-consumer"])
@pytest.mark.parametrize("down", [0, 3], ids=["back-at-once", "down-past-the-sessions"])
def test_members_carry_on_after_the_broker_is_killed_and_restarted(
    tmp_path: Path, client: str, down: float
) -> None:
    broker = BrokerProcess(tmp_path / "data", GROUP_BROKER_OVERRIDES).start()
    topic, group = "restart", "restart"
    members: list[Member] = []
    try:
        create_topic(broker.bootstrap, topic, 4)
        produce(broker.bootstrap, topic, 100, 4)
        members = start_members(client, broker.bootstrap, group, topic, 2, commit_every=1)
        wait_for_split([m.assignment for m in members], 4, errors=lambda: member_errors(members))
        _wait_positions(members, 100)
        committed = _wait_committed(broker.bootstrap, group, topic, 100)
        before = [len(m.consumed) for m in members]
        broker.kill()
        time.sleep(down)  # longer than the members' sessions: they are expired once the group loads
        broker.start()
        produce(broker.bootstrap, topic, 100, 4)
        _wait_positions(members, 200)
        # A member whose session expired while the broker was down (its client backing off from the
        # refused connections) has its next commit refused and rejoins: the group still splits.
        wait_for_split([m.assignment for m in members], 4, errors=lambda: member_errors(members))
        # What was committed before the crash is not delivered again.
        after = [(p, o) for m, start in zip(members, before, strict=True) for p, o, _ in m.consumed[start:]]
        again = sorted((p, o) for p, o in after if o < committed.get(p, 0))
        assert not again, f"committed records delivered again after the restart: {again[:10]}"
    finally:
        for member in members:
            member.stop()
        broker.stop()
    assert not member_errors(members)


def _wait_positions(members: list[Member], count: int, timeout: float = 40) -> None:
    """Until the members together have consumed `count` distinct records."""
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        seen = len({(p, o) for m in members for p, o, _ in m.consumed})
        if seen >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"consumed {seen} of {count} records")


def _wait_committed(
    bootstrap: str, group: str, topic: str, count: int, timeout: float = 20
) -> dict[int, int]:
    """Until the group's committed offsets on the topic's 4 partitions add up to `count`."""
    deadline = time.monotonic() + timeout
    committed: dict[int, int] = {}
    while time.monotonic() < deadline:
        committed = committed_offsets(bootstrap, group, topic, 4)
        if sum(committed.values()) >= count:
            return committed
        time.sleep(0.2)
    raise AssertionError(f"committed {committed}, not {count} records")
