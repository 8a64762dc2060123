"""DescribeTopicPartitions (key 75, KIP-966) as Kafka's KRaft broker answers it: topics sorted by name,
pages of at most min(ResponsePartitionLimit, max.request.partition.size.limit) partitions (at least
one) with a NextCursor, hostile cursors and limits answered cleanly, and nothing told about a topic
the principal may not describe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.metadata import BrokerMode
from odradek.cluster.metadata.acls import LocalAclStore
from odradek.handlers._common.authorized_operations import TOPIC_OPERATIONS
from odradek.handlers.api_versions import supported_api_versions
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from odradek.protocol.schema import ZERO_UUID
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.authorizer import authorizer_from_config
from tests.support.controller_requests import Partition, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID

pytestmark = pytest.mark.timeout(60)

AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ALICE = "User:alice"


def _request(
    names: list[str], limit: int = 2000, cursor: tuple[str, int] | None = None
) -> DescribeTopicPartitionsRequest:
    return DescribeTopicPartitionsRequest(
        topics=[TopicRequest(name=name) for name in names],
        response_partition_limit=limit,
        cursor=None if cursor is None else Cursor(topic_name=cursor[0], partition_index=cursor[1]),
    )


async def _describe(
    broker: HandlerBroker,
    names: list[str],
    limit: int = 2000,
    cursor: tuple[str, int] | None = None,
    principal: str | None = None,
) -> Any:
    request = _request(names, limit, cursor)
    if principal is None:
        return await broker.call_over_wire(request, 0)
    return await broker.call_over_wire(request, 0, principal=principal)


def _pages(response: Any) -> tuple[list[tuple[str, int, list[int]]], tuple[str, int] | None]:
    """(each topic's (name, error, partition indexes), the next cursor)."""
    topics = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in response.topics]
    cursor = response.next_cursor
    return topics, None if cursor is None else (cursor.topic_name, cursor.partition_index)


async def _topics(broker: HandlerBroker, partitions: dict[str, int]) -> None:
    for name, count in partitions.items():
        await broker.create_topic(name, count)


def test_describe_topic_partitions_is_advertised_at_version_0_in_every_mode() -> None:
    for mode in BrokerMode:
        served = {v.api_key: (v.min_version, v.max_version) for v in supported_api_versions(mode)}
        assert served.get(ApiKey.DESCRIBE_TOPIC_PARTITIONS) == (0, 0), mode


async def test_named_topics_are_answered_sorted_by_name_with_kafkas_partition_fields(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"beta": 2, "alpha": 1})
    response = await _describe(handler_broker, ["beta", "alpha"])
    assert response.next_cursor is None
    assert [t.name for t in response.topics] == ["alpha", "beta"]
    beta = response.topics[1]
    assert (beta.error_code, beta.is_internal) == (ErrorCode.NONE, False)
    assert beta.topic_id == handler_broker.services.cluster.topics["beta"].topic_id != ZERO_UUID
    assert beta.topic_authorized_operations == TOPIC_OPERATIONS  # no authorizer: every operation
    found = [
        (
            p.error_code,
            p.partition_index,
            p.leader_id,
            p.leader_epoch,
            p.replica_nodes,
            p.isr_nodes,
            p.eligible_leader_replicas,
            p.last_known_elr,
            p.offline_replicas,
        )
        for p in beta.partitions
    ]
    # no eligible leader replicas (KIP-966's ELR is not built): empty lists, as Kafka with ELR off;
    # never null, which the Java admin client would dereference
    assert found == [(0, 0, 1, 0, [1], [1], [], [], []), (0, 1, 1, 0, [1], [1], [], [], [])]


async def test_an_empty_topic_list_describes_every_topic(handler_broker: HandlerBroker) -> None:
    await _topics(handler_broker, {"b": 1, "a": 2, "c": 1})
    topics, cursor = _pages(await _describe(handler_broker, []))
    assert topics == [("a", 0, [0, 1]), ("b", 0, [0]), ("c", 0, [0])]
    assert cursor is None


async def test_pages_of_the_partition_limit_end_at_a_cursor_the_next_request_starts_from(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"a": 3, "b": 5, "c": 1})
    first = _pages(await _describe(handler_broker, ["c", "b", "a"], limit=4))
    assert first == ([("a", 0, [0, 1, 2]), ("b", 0, [0])], ("b", 1))
    second = _pages(await _describe(handler_broker, ["c", "b", "a"], limit=4, cursor=("b", 1)))
    assert second == ([("b", 0, [1, 2, 3, 4])], ("c", 0))  # the page is full: c starts the next one
    third = _pages(await _describe(handler_broker, ["c", "b", "a"], limit=4, cursor=("c", 0)))
    assert third == ([("c", 0, [0])], None)


async def test_a_limit_of_zero_or_less_is_one_partition_a_page(handler_broker: HandlerBroker) -> None:
    await _topics(handler_broker, {"a": 2})
    for limit in (0, -1, -(2**31)):
        assert _pages(await _describe(handler_broker, ["a"], limit=limit)) == ([("a", 0, [0])], ("a", 1))


async def test_a_request_limit_over_the_brokers_is_cut_to_max_request_partition_size_limit(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "data", **{"max.request.partition.size.limit": "3"})
    try:
        await _topics(broker, {"a": 5})
        page = _pages(await _describe(broker, ["a"], limit=1_000_000))
        assert page == ([("a", 0, [0, 1, 2])], ("a", 3))
        everything = _pages(await _describe(broker, [], limit=2**31 - 1))
        assert everything == ([("a", 0, [0, 1, 2])], ("a", 3))
    finally:
        broker.close()


async def test_a_cursor_past_a_topics_last_partition_answers_it_with_no_partitions(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"a": 2, "b": 1})
    for index in (2, 10, 2**31 - 1):  # the last: start + limit past a 32-bit int
        page = _pages(await _describe(handler_broker, ["a", "b"], limit=100, cursor=("a", index)))
        assert page == ([("a", 0, []), ("b", 0, [0])], None), index


async def test_a_negative_cursor_partition_is_an_invalid_request_for_every_topic_named(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"a": 2})
    response = await _describe(handler_broker, ["a", "zz", "a"], cursor=("a", -1))
    assert [(t.name, t.error_code, t.partitions) for t in response.topics] == [
        ("a", ErrorCode.INVALID_REQUEST, []),
        ("zz", ErrorCode.INVALID_REQUEST, []),
        ("a", ErrorCode.INVALID_REQUEST, []),
    ]
    assert response.next_cursor is None
    # every topic asked for: none named, so nothing is listed (Kafka's error answer)
    assert _pages(await _describe(handler_broker, [], cursor=("a", -1))) == ([], None)


async def test_a_cursor_naming_a_topic_the_request_does_not_is_an_invalid_request(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"a": 1, "b": 1, "c": 1})
    page = _pages(await _describe(handler_broker, ["a", "b"], cursor=("c", 0)))
    assert page == ([("a", ErrorCode.INVALID_REQUEST, []), ("b", ErrorCode.INVALID_REQUEST, [])], None)


async def test_a_cursor_before_the_named_topics_skips_those_before_it(handler_broker: HandlerBroker) -> None:
    await _topics(handler_broker, {"a": 1, "b": 2, "c": 1})
    page = _pages(await _describe(handler_broker, ["c", "b", "a"], cursor=("b", 1)))
    assert page == ([("b", 0, [1]), ("c", 0, [0])], None)
    # every topic: a cursor naming no topic starts at the first name after it
    assert _pages(await _describe(handler_broker, [], cursor=("aa", 7))) == (
        [("b", 0, [0, 1]), ("c", 0, [0])],
        None,
    )


async def test_unknown_and_invalid_names_get_their_error_and_take_no_room_in_the_page(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"a": 2})
    names = ["zz", "a", "bad name", "", "x" * (64 * 1024), "__consumer_offsets"]
    response = await _describe(handler_broker, names, limit=3)
    answered = {t.name: (t.error_code, t.topic_id, t.is_internal, len(t.partitions)) for t in response.topics}
    assert answered == {
        "": (ErrorCode.INVALID_TOPIC_EXCEPTION, ZERO_UUID, False, 0),
        "__consumer_offsets": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, True, 0),
        "a": (ErrorCode.NONE, handler_broker.services.cluster.topics["a"].topic_id, False, 2),
        "bad name": (ErrorCode.INVALID_TOPIC_EXCEPTION, ZERO_UUID, False, 0),
        "x" * (64 * 1024): (ErrorCode.INVALID_TOPIC_EXCEPTION, ZERO_UUID, False, 0),
        "zz": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID, False, 0),
    }
    assert [t.name for t in response.topics] == sorted(answered)
    assert response.next_cursor is None
    # as Kafka 4.4: the operations the principal may do on a topic of that name, existing or not
    assert {t.topic_authorized_operations for t in response.topics} == {TOPIC_OPERATIONS}


async def test_a_name_asked_twice_is_answered_once(handler_broker: HandlerBroker) -> None:
    await _topics(handler_broker, {"a": 1})
    assert _pages(await _describe(handler_broker, ["a", "a", "zz", "zz"])) == (
        [("a", 0, [0]), ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])],
        None,
    )


async def test_thousands_of_names_are_paged_by_partitions_not_by_names(handler_broker: HandlerBroker) -> None:
    await _topics(handler_broker, {"t0100": 1, "t4000": 3})
    names = [f"t{i:04d}" for i in range(5000)]
    response = await _describe(handler_broker, names, limit=3)
    topics, cursor = _pages(response)
    # every unknown name before the page ends is answered (Kafka's), then the page ends inside t4000
    assert cursor == ("t4000", 2)
    assert topics[-1] == ("t4000", 0, [0, 1])
    assert ("t0100", 0, [0]) in topics
    assert len(topics) == 4001
    assert {error for _, error, _ in topics[:-1] if error} == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


async def test_a_topic_of_more_partitions_than_a_page_is_described_whole_across_pages(
    handler_broker: HandlerBroker,
) -> None:
    await _topics(handler_broker, {"wide": 25, "narrow": 1})
    seen: list[tuple[str, int]] = []
    cursor: tuple[str, int] | None = None
    for _ in range(20):
        topics, cursor = _pages(await _describe(handler_broker, [], limit=7, cursor=cursor))
        seen += [(name, index) for name, _, indexes in topics for index in indexes]
        assert sum(len(indexes) for _, _, indexes in topics) <= 7
        if cursor is None:
            break
    assert seen == [("narrow", 0)] + [("wide", i) for i in range(25)]


# ----- authorization ---------------------------------------------------------------------------


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[HandlerBroker]:
    broker = HandlerBroker(tmp_path / "data", **{"authorizer.class.name": AUTHORIZER})
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(tmp_path / "data"))
    try:
        yield broker
    finally:
        broker.close()


async def _allow_describe(broker: HandlerBroker, prefix: str) -> None:
    authorizer = broker.services.authorizer
    assert authorizer is not None
    await authorizer.create_acls(
        [
            AclBinding(
                ResourcePattern(ResourceType.TOPIC, prefix, PatternType.PREFIXED),
                AccessControlEntry(ALICE, "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
            )
        ]
    )


async def test_topics_the_principal_may_not_describe_are_left_out_of_every_topic(
    secured: HandlerBroker,
) -> None:
    await _topics(secured, {"mine-a": 1, "other": 2, "mine-b": 1})
    await _allow_describe(secured, "mine-")
    response = await _describe(secured, [], principal=ALICE)
    assert [t.name for t in response.topics] == ["mine-a", "mine-b"]
    operations = {t.topic_authorized_operations for t in response.topics}
    assert operations == {1 << AclOperation.DESCRIBE}  # only what alice may do


async def test_a_named_topic_the_principal_may_not_describe_is_refused_whether_it_exists_or_not(
    secured: HandlerBroker,
) -> None:
    await _topics(secured, {"mine": 1, "other": 2})
    await _allow_describe(secured, "mine")
    response = await _describe(secured, ["other", "missing", "mine"], principal=ALICE)
    answered = {
        t.name: (t.error_code, t.topic_id, t.is_internal, t.partitions, t.topic_authorized_operations)
        for t in response.topics
    }
    refused = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ZERO_UUID, False, [], -(2**31))
    assert answered["other"] == answered["missing"] == refused
    assert answered["mine"][0] == ErrorCode.NONE


async def test_a_cursor_tells_nothing_of_topics_the_principal_may_not_describe(
    secured: HandlerBroker,
) -> None:
    """A cursor on an existing hidden topic, on a missing one, or in the middle of a hidden topic's
    partitions: the same page, so no answer tells whether a hidden topic exists or how wide it is."""
    await _topics(secured, {"mine": 2, "hidden": 30})
    await _allow_describe(secured, "mine")
    pages = [
        _pages(await _describe(secured, [], limit=1, cursor=cursor, principal=ALICE))
        for cursor in (("hidden", 0), ("hidden", 29), ("hidden", 100), ("hidden-not", 0), ("hiddeo", 3))
    ]
    assert pages == [([("mine", 0, [0])], ("mine", 1))] * 5
    # a hidden topic named as the cursor's: refused, as when it is named without a cursor
    named = _pages(await _describe(secured, ["hidden", "mine"], cursor=("hidden", 5), principal=ALICE))
    assert named == ([("mine", 0, [0, 1]), ("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED, [])], None)


# ----- a ZooKeeper cluster member --------------------------------------------------------------

PICTURE = [
    Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1]),
    Partition(TOPIC, 1, leader=1, leader_epoch=7, replicas=[1, 2, 3], isr=[1, 2]),
    Partition(TOPIC, 2, leader=3, leader_epoch=1, replicas=[3, 1, 2]),
    Partition(TOPIC, 3, leader=-1, leader_epoch=9, replicas=[3, 1], isr=[3], offline=[3]),
]


async def test_a_cluster_member_answers_from_the_controllers_metadata_on_the_clients_listener(
    cluster_member: HandlerBroker,
) -> None:
    await cluster_member.call(update_metadata(BROKERS, PICTURE, {TOPIC: TOPIC_ID}), 8)
    for listener, led_by_3 in (("PLAINTEXT", -1), ("INTERNAL", 3)):
        request = _request([TOPIC, "missing"])
        response = await cluster_member.call_over_wire(request, 0, listener=listener)
        missing, topic = response.topics
        assert (topic.name, topic.topic_id, topic.error_code) == (TOPIC, TOPIC_ID, ErrorCode.NONE)
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        found = {
            p.partition_index: (p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes)
            for p in topic.partitions
        }
        # a leader this listener cannot reach is -1, with no partition error (Kafka's KRaft answer,
        # where Metadata says LEADER_NOT_AVAILABLE)
        assert found == {
            0: (0, 2, 3, [2, 3, 1], [2, 3, 1]),
            1: (0, 1, 7, [1, 2, 3], [1, 2]),
            2: (0, led_by_3, 1, [3, 1, 2], [3, 1, 2]),
            3: (0, -1, 9, [3, 1], [3]),
        }
        assert [p.offline_replicas for p in topic.partitions] == [[], [], [], [3]]
