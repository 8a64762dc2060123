"""ShareGroupHeartbeat and ShareGroupDescribe through their handlers: versions, served by default (as
Kafka 4.4 with share.version=1+) unless 'share' is left out of group.coordinator.rebalance.protocols,
the share.version feature in ApiVersions, joining and describing a share group."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from odradek.cluster.internal_topics import SingleNodeInternalTopics
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.handlers._common.registry import registration_for
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.share_group_describe import ShareGroupDescribeRequest
from odradek.protocol.messages.share_group_heartbeat import ShareGroupHeartbeatRequest
from tests.support.handler_services import HandlerBroker
from tests.support.share_persister import InMemorySharePersister

SHARE_ON = {
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
    "offsets.topic.num.partitions": "1",
}


@asynccontextmanager
async def broker_with_groups(tmp_path: Path, **overrides: str) -> AsyncIterator[HandlerBroker]:
    broker = HandlerBroker(tmp_path / "data", **overrides)
    services = broker.services
    coordinator = GroupCoordinator(
        services.config,
        services.cluster,
        SingleNodeInternalTopics(services.topics, services.cluster),
        services.logs,
        services.node_id,
        leadership=services.leadership,
        share_persister=InMemorySharePersister(),
    )
    services.groups = coordinator
    await coordinator.start()
    await coordinator.runtime.wait_loaded()
    try:
        yield broker
    finally:
        coordinator.stop()
        broker.close()


def join(member: str, group: str = "sg") -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=["t"]
    )


def test_share_group_apis_are_served_at_version_1_only() -> None:
    for api_key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE):
        assert registration_for(api_key, 0) is None  # Kafka 4.0's early access, removed in 4.1
        assert registration_for(api_key, 1) is not None


async def test_share_groups_are_served_by_default_as_kafka_4_4_serves_them(tmp_path: Path) -> None:
    async with broker_with_groups(tmp_path, **{"offsets.topic.num.partitions": "1"}) as broker:
        await broker.create_topic("t", 1)
        answer = await broker.call(join("a"), 1)
        assert (answer.error_code, answer.member_epoch) == (ErrorCode.NONE, 1)


async def test_a_share_group_heartbeat_is_unsupported_when_share_is_left_out_of_the_rebalance_protocols(
    tmp_path: Path,
) -> None:
    settings = {
        "offsets.topic.num.partitions": "1",
        "group.coordinator.rebalance.protocols": "classic,consumer",
    }
    async with broker_with_groups(tmp_path, **settings) as broker:
        answer = await broker.call(join("a"), 1)
        assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
        described = await broker.call(ShareGroupDescribeRequest(group_ids=["sg"]), 1)
        assert [g.error_code for g in described.groups] == [ErrorCode.UNSUPPORTED_VERSION]


async def test_api_versions_supports_share_version_1_and_finalizes_it_while_share_groups_are_served(
    tmp_path: Path,
) -> None:
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1")
    async with broker_with_groups(tmp_path, **{"offsets.topic.num.partitions": "1"}) as broker:
        served = await broker.call_over_wire(request, 3)
    assert [(f.name, f.min_version, f.max_version) for f in served.supported_features] == [
        ("share.version", 0, 1)
    ]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in served.finalized_features] == [
        ("share.version", 1, 1)
    ]
    assert served.finalized_features_epoch == 0
    off = {"offsets.topic.num.partitions": "1", "group.coordinator.rebalance.protocols": "classic,consumer"}
    async with broker_with_groups(tmp_path / "off", **off) as broker:
        disabled = await broker.call_over_wire(request, 3)
    assert [(f.name, f.min_version, f.max_version) for f in disabled.supported_features] == [
        ("share.version", 0, 1)
    ]
    assert disabled.finalized_features == []  # level 0: not finalized, as in Kafka 4.4


async def test_a_member_joins_gets_every_partition_and_the_group_is_described(tmp_path: Path) -> None:
    async with broker_with_groups(tmp_path, **SHARE_ON) as broker:
        topic = await broker.create_topic("t", 2)
        first = await broker.call(join("a"), 1)
        assert (first.error_code, first.member_id, first.member_epoch) == (0, "a", 1)
        beat = ShareGroupHeartbeatRequest(group_id="sg", member_id="a", member_epoch=1)
        second = await broker.call_over_wire(beat, 1)
        assert second.error_code == ErrorCode.NONE
        assert [(tp.topic_id, tp.partitions) for tp in second.assignment.topic_partitions] == [
            (topic.topic_id, [0, 1])
        ]
        described = await broker.call_over_wire(
            ShareGroupDescribeRequest(group_ids=["sg", "", "nope"], include_authorized_operations=True), 1
        )
        group, empty, unknown = described.groups
        assert (group.error_code, group.group_state, group.members[0].client_host) == (
            0,
            "Stable",
            "/127.0.0.1",
        )
        assert group.authorized_operations > 0
        assert empty.error_code == ErrorCode.INVALID_GROUP_ID
        assert unknown.error_code == ErrorCode.GROUP_ID_NOT_FOUND
