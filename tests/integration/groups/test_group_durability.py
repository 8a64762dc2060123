"""Groups and committed offsets survive a graceful restart and a SIGKILL of the broker: they are
records in `__consumer_offsets`, replayed at start-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from odradek.protocol.messages.describe_groups import DescribeGroupsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.integration.groups.raw_groups import (
    assignment,
    commit,
    fetch_all,
    heartbeat,
    join_new_member,
    sync,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

T = TypeVar("T")
LOAD_IN_PROGRESS = 14


def test_groups_and_offsets_survive_restart_and_sigkill(group_broker: BrokerProcess) -> None:
    port = group_broker.port
    _create_topic(port, "t")
    member = join_new_member(port, "durable", session_ms=30_000)
    assert member.error_code == 0 and member.leader == member.member_id
    mine = assignment("t", [0, 1, 2, 3, 4, 5])
    assert (
        sync(port, "durable", member.generation_id, member.member_id, {member.member_id: mine}).assignment
        == mine
    )
    committed = commit(
        port,
        "durable",
        "t",
        {0: 10, 1: 20},
        generation=member.generation_id,
        member_id=member.member_id,
        metadata="m",
        leader_epoch=0,
    )
    assert all(p.error_code == 0 for t in committed.topics for p in t.partitions)
    assert all(p.error_code == 0 for t in commit(port, "simple", "t", {2: 5}).topics for p in t.partitions)
    expected = {("t", 0): (10, 0, "m"), ("t", 1): (20, 0, "m")}

    for stop in (group_broker.stop, group_broker.kill):
        stop()
        group_broker.start()
        assert _retry(lambda: fetch_all(port, "durable")) == expected
        assert fetch_all(port, "simple") == {("t", 2): (5, -1, "")}
        [described] = _describe(port, "durable")
        assert (described.group_state, described.protocol_data) == ("Stable", "range")
        assert [(m.member_id, m.member_assignment) for m in described.members] == [(member.member_id, mine)]
        # The member carries on where it was: same id, same generation, no rebalance.
        assert heartbeat(port, "durable", member.generation_id, member.member_id) == 0
        commit(
            port,
            "durable",
            "t",
            {0: expected[("t", 0)][0] + 1},
            generation=member.generation_id,
            member_id=member.member_id,
            metadata="m",
            leader_epoch=0,
        )
        expected[("t", 0)] = (expected[("t", 0)][0] + 1, 0, "m")


def test_an_emptied_and_a_deleted_group_stay_so_after_a_restart(group_broker: BrokerProcess) -> None:
    from odradek.protocol.messages.delete_groups import DeleteGroupsRequest
    from odradek.protocol.messages.leave_group import LeaveGroupRequest

    port = group_broker.port
    _create_topic(port, "t")
    member = join_new_member(port, "emptied")
    sync(port, "emptied", member.generation_id, member.member_id, {member.member_id: assignment("t", [0])})
    commit(port, "emptied", "t", {0: 7}, generation=member.generation_id, member_id=member.member_id)
    commit(port, "deleted", "t", {0: 3})
    with RawClient(port) as client:
        assert (
            client.request(LeaveGroupRequest(group_id="emptied", member_id=member.member_id), 1).error_code
            == 0
        )
        deleted = client.request(DeleteGroupsRequest(groups_names=["deleted"]), 2)
        assert [r.error_code for r in deleted.results] == [0]
    group_broker.kill()
    group_broker.start()
    [emptied] = _retry(lambda: _describe(port, "emptied"))
    assert (emptied.group_state, emptied.members) == ("Empty", [])
    assert fetch_all(port, "emptied") == {("t", 0): (7, -1, "")}
    assert fetch_all(port, "deleted") == {}
    [gone] = _describe(port, "deleted")
    assert gone.error_code == 69  # GROUP_ID_NOT_FOUND (v6)


def _describe(port: int, group: str) -> list[object]:
    with RawClient(port) as client:
        response = client.request(DescribeGroupsRequest(groups=[group]), 6)
    if any(g.error_code == LOAD_IN_PROGRESS for g in response.groups):
        raise _Loading()
    return list(response.groups)


def _create_topic(port: int, name: str) -> None:
    with RawClient(port) as client:
        client.request(
            MetadataRequest(topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=True), 9
        )


class _Loading(Exception):
    pass


def _retry(action: Callable[[], T], timeout: float = 15) -> T:
    """`action`, retried while the coordinator is still loading `__consumer_offsets`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return action()
        except (AssertionError, _Loading):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
