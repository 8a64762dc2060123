"""Three members of each client share a six-partition topic; one leaves and the other two take over."""

from __future__ import annotations

import pytest

from tests.compat.groups.group_clients import (
    CLIENTS,
    create_topic,
    member_errors,
    start_members,
    wait_for_split,
)
from tests.support.broker_process import BrokerProcess


@pytest.mark.parametrize("client", CLIENTS)
def test_three_members_split_six_partitions_and_a_leaver_is_rebalanced_away(
    group_broker: BrokerProcess, client: str
) -> None:
    topic = f"membership-{client}"
    create_topic(group_broker.bootstrap, topic, 6)
    members = start_members(client, group_broker.bootstrap, f"group-{client}", topic, 3)
    try:
        split = wait_for_split([m.assignment for m in members], 6, errors=lambda: member_errors(members))
        assert sorted(len(a) for a in split) == [2, 2, 2]
        leaver = members.pop()
        leaver.stop(leave=True)
        split = wait_for_split([m.assignment for m in members], 6, timeout=15)
        assert sorted(len(a) for a in split) == [3, 3]
    finally:
        for member in members:
            member.stop()
    assert not member_errors(members)
