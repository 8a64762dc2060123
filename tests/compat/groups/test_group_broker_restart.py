"""Members keep consuming, and keep their committed positions, across a broker SIGKILL and restart."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.compat.groups.group_clients import (
    GROUP_BROKER_OVERRIDES,
    Member,
    create_topic,
    member_errors,
    produce,
    start_members,
    wait_for_split,
)
from tests.support.broker_process import BrokerProcess


@pytest.mark.parametrize("client", ["kafka-python", "confluent-consumer"])
def test_members_carry_on_after_the_broker_is_killed_and_restarted(tmp_path: Path, client: str) -> None:
    broker = BrokerProcess(tmp_path / "data", GROUP_BROKER_OVERRIDES).start()
    topic, group = "restart", "restart"
    members: list[Member] = []
    try:
        create_topic(broker.bootstrap, topic, 4)
        produce(broker.bootstrap, topic, 100, 4)
        members = start_members(client, broker.bootstrap, group, topic, 2, commit_every=1)
        wait_for_split([m.assignment for m in members], 4)
        _wait_positions(members, 100)
        time.sleep(1)  # the last commits
        broker.kill()
        broker.start()
        produce(broker.bootstrap, topic, 100, 4)
        _wait_positions(members, 200)
        wait_for_split([m.assignment for m in members], 4)
        # What was committed before the crash is not delivered again (at most the last, uncommitted
        # record of each partition may be).
        pairs = [(p, o) for m in members for p, o, _ in m.consumed]
        assert len(set(pairs)) == 200
        assert len(pairs) - len(set(pairs)) <= 4
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
