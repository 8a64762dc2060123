"""KIP-848 groups and topic DESCRIBE, against a broker with ACLs: a member's regex resolves only to topics
it may describe, a subscription by names it may not describe is TOPIC_AUTHORIZATION_FAILED (existing
or not), and ConsumerGroupDescribe of a group assigned topics the caller may not describe answers
Kafka's TOPIC_AUTHORIZATION_FAILED instead of naming them. alice has READ on her groups only (and
DESCRIBE on the topic `visible`); bob has DESCRIBE on her groups and on `visible`."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from odradek.protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.metadata import MetadataRequest
from odradek.security.acl import AclOperation, PatternType, ResourceType
from tests.support.acls import grant, sasl_client, start_acl_broker
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)
TOPICS = {"visible": 2, "secret-a": 3, "secret-b": 5}
PREFIXED = PatternType.PREFIXED
UNAUTHORIZED_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RawClient]]:
    broker, port = start_acl_broker(Path(tmp_path_factory.mktemp("kip848-acls")) / "data")
    opened = {user: sasl_client(port, user) for user in ("admin", "alice", "bob")}
    try:
        admin = opened["admin"]
        topics = [
            CreatableTopic(name=n, num_partitions=p, replication_factor=1, assignments=[], configs=[])
            for n, p in TOPICS.items()
        ]
        created = admin.request(CreateTopicsRequest(topics=topics, timeout_ms=10000), 5)
        assert {t.error_code for t in created.topics} == {ErrorCode.NONE}, created
        grant(
            admin, "User:alice", ResourceType.GROUP, "alice-", AclOperation.READ, pattern=PatternType.PREFIXED
        )
        grant(admin, "User:alice", ResourceType.TOPIC, "visible", AclOperation.DESCRIBE)
        grant(
            admin,
            "User:bob",
            ResourceType.GROUP,
            "alice-",
            AclOperation.DESCRIBE,
            pattern=PatternType.PREFIXED,
        )
        grant(admin, "User:bob", ResourceType.TOPIC, "visible", AclOperation.DESCRIBE)
        _wait_for_coordinator(admin)
        yield opened
    finally:
        for client in opened.values():
            client.close()
        broker.stop()


def _wait_for_coordinator(client: RawClient) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = client.request(FindCoordinatorRequest(key="alice-probe", key_type=0), 3)
        if found.error_code == ErrorCode.NONE:
            return
        time.sleep(0.1)
    raise AssertionError("no group coordinator")


def _join(
    client: RawClient, group: str, *, names: list[str] | None = None, regex: str | None = None
) -> ConsumerGroupHeartbeatResponse:
    request = ConsumerGroupHeartbeatRequest(
        group_id=group,
        member_id=str(uuid.uuid4()),
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        topic_partitions=[],
    )
    response: ConsumerGroupHeartbeatResponse = client.request(request, 1)
    return response


def _assigned_once_nonempty(
    client: RawClient, group: str, joined: ConsumerGroupHeartbeatResponse
) -> dict[uuid.UUID, list[int]]:
    """Heartbeat (acknowledging what was assigned) until the member is given partitions."""
    assert joined.error_code == ErrorCode.NONE, joined
    member_id, epoch = joined.member_id, joined.member_epoch
    owned: dict[uuid.UUID, list[int]] = {}
    if joined.assignment is not None:
        owned = {tp.topic_id: sorted(tp.partitions) for tp in joined.assignment.topic_partitions}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if owned:
            return owned
        response = client.request(
            ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id=member_id,
                member_epoch=epoch,
                topic_partitions=[TopicPartitions(topic_id=t, partitions=p) for t, p in owned.items()],
            ),
            1,
        )
        assert response.error_code == ErrorCode.NONE, response
        epoch = response.member_epoch
        if response.assignment is not None:
            owned = {tp.topic_id: sorted(tp.partitions) for tp in response.assignment.topic_partitions}
        time.sleep(0.2)
    raise AssertionError(f"member of {group} never assigned anything")


def _topic_ids(client: RawClient) -> dict[uuid.UUID, str]:
    metadata = client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 12)
    return {t.topic_id: t.name for t in metadata.topics}


def test_a_regex_subscription_was_given_topics_its_member_may_not_describe(
    clients: dict[str, RawClient],
) -> None:
    alice = clients["alice"]
    owned = _assigned_once_nonempty(alice, "alice-regex", _join(alice, "alice-regex", regex=".*"))
    names = _topic_ids(clients["admin"])
    assert {names[topic_id]: partitions for topic_id, partitions in owned.items()} == {"visible": [0, 1]}
    described = alice.request(ConsumerGroupDescribeRequest(group_ids=["alice-regex"]), 1).groups[0]
    assert described.error_code == ErrorCode.NONE, described
    shown = {
        tp.topic_name
        for member in described.members
        for assignment in (member.assignment, member.target_assignment)
        for tp in assignment.topic_partitions
    }
    assert shown == {"visible"}


def test_a_subscription_to_topics_not_described_was_accepted(clients: dict[str, RawClient]) -> None:
    alice = clients["alice"]
    answers = []
    for names in (["secret-a"], ["no-such-topic"], ["visible", "secret-b"]):
        refused = _join(alice, "alice-names", names=names)
        answers.append((refused.error_code, refused.error_message, refused.member_epoch, refused.assignment))
    assert answers == [(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, 0, None)] * 3
    assert _join(alice, "alice-names", names=["visible"]).error_code == ErrorCode.NONE


def test_describe_named_topics_the_caller_may_not_describe(clients: dict[str, RawClient]) -> None:
    admin, bob = clients["admin"], clients["bob"]
    _assigned_once_nonempty(
        admin, "alice-shared", _join(admin, "alice-shared", names=["secret-a", "visible"])
    )
    refused = bob.request(
        ConsumerGroupDescribeRequest(group_ids=["alice-shared"], include_authorized_operations=True), 1
    ).groups[0]
    assert (refused.group_id, refused.error_code, refused.error_message, refused.members) == (
        "alice-shared",
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        UNAUTHORIZED_TOPICS,
        [],
    )
    assert (refused.group_epoch, refused.assignor_name, refused.group_state) == (0, "", "")
    seen_by_admin = admin.request(ConsumerGroupDescribeRequest(group_ids=["alice-shared"]), 1).groups[0]
    assert seen_by_admin.error_code == ErrorCode.NONE and seen_by_admin.members
