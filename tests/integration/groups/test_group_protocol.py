"""The group and offset APIs at the versions clients use, over a plain socket: what is advertised,
and what each version answers (FindCoordinator batching and key types, JoinGroup v0, LeaveGroup
batches, ListGroups filters, DescribeGroups v0 vs v6, OffsetCommit/OffsetFetch by topic id)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.describe_groups import DescribeGroupsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from odradek.protocol.messages.list_groups import ListGroupsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from odradek.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from tests.integration.groups.raw_groups import (
    RAW_GROUP_OVERRIDES,
    assignment,
    commit,
    heartbeat,
    join,
    join_in_background,
    join_new_member,
    sync,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

SERVED = {
    8: (0, 10),  # OffsetCommit
    9: (0, 10),  # OffsetFetch
    10: (0, 6),  # FindCoordinator
    11: (0, 9),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 5),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 6),  # DescribeGroups
    16: (0, 5),  # ListGroups
    42: (0, 3),  # DeleteGroups (v3: Kafka 4.4's per-group ErrorMessage)
    47: (0, 0),  # OffsetDelete
    68: (0, 1),  # ConsumerGroupHeartbeat
    69: (0, 1),  # ConsumerGroupDescribe
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        tmp_path_factory.mktemp("protocol") / "data", {**RAW_GROUP_OVERRIDES, "num.partitions": "2"}
    )
    process.start()
    with RawClient(process.port) as client:
        client.request(
            MetadataRequest(topics=[MetadataRequestTopic(name="t")], allow_auto_topic_creation=True), 9
        )
    try:
        yield process
    finally:
        process.stop()


def test_api_versions_advertise_every_group_api_at_kafkas_stable_range(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        response = client.request(
            ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
        )
    served = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert {key: served.get(key) for key in SERVED} == SERVED


def test_find_coordinator_single_batched_and_by_key_type(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        v0 = client.request(FindCoordinatorRequest(key="g"), 0)
        assert (v0.error_code, v0.node_id, v0.port) == (0, 1, broker.port)
        v1 = client.request(FindCoordinatorRequest(key="txn", key_type=1), 1)
        assert (v1.error_code, v1.node_id) == (0, 1)  # the transaction coordinator is this broker too
        v1_group = client.request(FindCoordinatorRequest(key="g", key_type=0), 1)
        assert (v1_group.error_code, v1_group.error_message, v1_group.node_id) == (0, "NONE", 1)
        v4 = client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"]), 4)
        assert [(c.key, c.error_code, c.node_id) for c in v4.coordinators] == [("a", 0, 1), ("b", 0, 1)]
        bad = client.request(FindCoordinatorRequest(key_type=3, coordinator_keys=["x"]), 6)
        assert [(c.error_code, c.node_id) for c in bad.coordinators] == [(42, -1)]  # INVALID_REQUEST


def test_join_group_v0_sync_heartbeat_and_leave_v0(broker: BrokerProcess) -> None:
    joined = join(broker.port, "v0-group", "", 0)  # no MEMBER_ID_REQUIRED before v4
    assert joined.error_code == 0 and joined.generation_id == 1 and joined.leader == joined.member_id
    synced = sync(
        broker.port, "v0-group", 1, joined.member_id, {joined.member_id: assignment("t", [0, 1])}, 0
    )
    assert synced.assignment == assignment("t", [0, 1])
    assert heartbeat(broker.port, "v0-group", 1, joined.member_id, version=0) == 0
    with RawClient(broker.port) as client:
        gone = client.request(LeaveGroupRequest(group_id="v0-group", member_id="nobody"), 0)
        assert gone.error_code == 25  # v0-2: the member's error is the top-level one
        left = client.request(LeaveGroupRequest(group_id="v0-group", member_id=joined.member_id), 2)
        assert left.error_code == 0


def test_leave_group_v3_answers_each_member_of_a_batch(broker: BrokerProcess) -> None:
    member = join_new_member(broker.port, "batch")
    sync(broker.port, "batch", member.generation_id, member.member_id, {member.member_id: b""})
    request = LeaveGroupRequest(
        group_id="batch",
        members=[
            MemberIdentity(member_id=member.member_id),
            MemberIdentity(member_id="", group_instance_id="nope"),
        ],
    )
    with RawClient(broker.port) as client:
        answer = client.request(request, 5)
    assert answer.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in answer.members] == [
        (member.member_id, None, 0),
        ("", "nope", 25),
    ]


def test_list_groups_filters_by_state_and_type(broker: BrokerProcess) -> None:
    member = join_new_member(broker.port, "listed-stable")
    sync(broker.port, "listed-stable", member.generation_id, member.member_id, {member.member_id: b""})
    commit(broker.port, "listed-empty", "t", {0: 1})
    with RawClient(broker.port) as client:
        stable = client.request(ListGroupsRequest(states_filter=["STABLE"]), 4)
        assert "listed-stable" in [g.group_id for g in stable.groups]
        assert "listed-empty" not in [g.group_id for g in stable.groups]
        everything = client.request(ListGroupsRequest(types_filter=["classic"]), 5)
        kinds = {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in everything.groups}
        assert kinds["listed-stable"] == ("consumer", "Stable", "classic")
        assert kinds["listed-empty"] == ("", "Empty", "classic")
        none = client.request(ListGroupsRequest(types_filter=["consumer"]), 5)
        assert "listed-stable" not in [g.group_id for g in none.groups]


def test_describe_groups_unknown_group_by_version(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        [old] = client.request(DescribeGroupsRequest(groups=["missing"]), 0).groups
        assert (old.error_code, old.group_state) == (0, "Dead")
        [new] = client.request(DescribeGroupsRequest(groups=["missing"]), 6).groups
        assert new.error_code == 69 and new.error_message


def test_offsets_by_topic_id_and_several_groups_per_fetch(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        topic_id = (
            client.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12).topics[0].topic_id
        )
        unknown = uuid.uuid4()
        request = OffsetCommitRequest(
            group_id="by-id",
            topics=[
                OffsetCommitRequestTopic(topic_id=topic_id, partitions=[_part(0, 11)]),
                OffsetCommitRequestTopic(topic_id=unknown, partitions=[_part(0, 1)]),
            ],
        )
        committed = client.request(request, 10)
        assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in committed.topics] == [
            (topic_id, [0]),
            (unknown, [100]),  # UNKNOWN_TOPIC_ID
        ]
        by_name = client.request(
            OffsetCommitRequest(
                group_id="by-name", topics=[OffsetCommitRequestTopic(name="t", partitions=[_part(1, 7)])]
            ),
            9,
        )
        assert by_name.topics[0].partitions[0].error_code == 0
        fetch = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id="by-id",
                    topics=[OffsetFetchRequestTopics(topic_id=topic_id, partition_indexes=[0, 1])],
                ),
                OffsetFetchRequestGroup(group_id="by-name", topics=None),
            ]
        )
        answer = client.request(fetch, 10)
        [first, second] = answer.groups
        assert [(p.partition_index, p.committed_offset) for p in first.topics[0].partitions] == [
            (0, 11),
            (1, -1),
        ]
        assert (second.topics[0].topic_id, second.topics[0].partitions[0].committed_offset) == (topic_id, 7)
        old = client.request(
            OffsetFetchRequest(
                group_id="by-name", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[1])]
            ),
            1,
        )
        assert (old.topics[0].partitions[0].committed_offset, old.topics[0].partitions[0].error_code) == (
            7,
            0,
        )
        missing = client.request(
            OffsetCommitRequest(
                group_id="x",
                topics=[OffsetCommitRequestTopic(name="no-such-topic", partitions=[_part(0, 1)])],
            ),
            8,
        )
        assert missing.topics[0].partitions[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION


def test_offset_delete_keeps_subscribed_topics(broker: BrokerProcess) -> None:
    member = join_new_member(broker.port, "deleting", topics=("t",))
    sync(broker.port, "deleting", member.generation_id, member.member_id, {member.member_id: b""})
    commit(broker.port, "deleting", "t", {0: 3}, generation=member.generation_id, member_id=member.member_id)
    request = OffsetDeleteRequest(
        group_id="deleting",
        topics=[
            OffsetDeleteRequestTopic(name="t", partitions=[OffsetDeleteRequestPartition(partition_index=0)])
        ],
    )
    with RawClient(broker.port) as client:
        answer = client.request(request, 0)
        assert (
            answer.error_code == 0 and answer.topics[0].partitions[0].error_code == 86
        )  # GROUP_SUBSCRIBED_TO_TOPIC
        request.group_id = "no-such-group"
        assert client.request(request, 0).error_code == 69


def _part(partition: int, offset: int) -> OffsetCommitRequestPartition:
    return OffsetCommitRequestPartition(
        partition_index=partition, committed_offset=offset, committed_metadata=""
    )


def test_a_parked_join_fenced_by_its_static_replacement_is_answered_at_join_group_v5(
    broker: BrokerProcess,
) -> None:
    a = join(broker.port, "fenced", "", 5, instance="a")
    sync(broker.port, "fenced", a.generation_id, a.member_id, {a.member_id: b""}, instance="a")
    b = join_in_background(broker.port, "fenced", "", 5, instance="b")
    time.sleep(0.3)  # b's JoinGroup is parked: the group waits for a
    a_again = join(broker.port, "fenced", a.member_id, 5, instance="a")
    b["thread"].join(10)
    both = {a.member_id: b"", b["response"].member_id: b""}
    sync(broker.port, "fenced", a_again.generation_id, a.member_id, both, instance="a")
    # a rejoins with a new subscription and waits for b; meanwhile a new "a" replaces it.
    parked = join_in_background(broker.port, "fenced", a.member_id, 5, instance="a", topics=("t", "u"))
    time.sleep(0.3)
    join_in_background(broker.port, "fenced", "", 5, instance="a")
    parked["thread"].join(10)
    assert parked["response"].error_code == 82  # FENCED_INSTANCE_ID, with a v5-encodable answer
