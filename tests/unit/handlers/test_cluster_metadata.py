"""Metadata and DescribeCluster on a ZooKeeper cluster member answer for the whole cluster, from the cache
UpdateMetadata feeds: each broker's endpoint on the client's listener (a broker without it left out),
the real controller, partitions without a reachable leader as LEADER_NOT_AVAILABLE."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from odradek.cluster.internal_topics import ZkInternalTopics
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.handlers._common import services as services_module
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_cluster import DescribeClusterRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.support.controller_requests import Partition, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID

PICTURE = [
    Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1]),
    Partition(TOPIC, 1, leader=1, leader_epoch=7, replicas=[1, 2, 3], isr=[1, 2]),
    Partition(TOPIC, 2, leader=3, leader_epoch=1, replicas=[3, 1, 2]),
    Partition(TOPIC, 3, leader=-1, leader_epoch=9, replicas=[3, 1], isr=[3], offline=[3]),
]


async def _metadata(broker: HandlerBroker, listener: str, version: int = 12) -> object:
    request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    return await broker.call(request, version, listener)


async def test_metadata_lists_each_broker_on_the_clients_listener(cluster_member: HandlerBroker) -> None:
    response = await cluster_member.call(update_metadata(BROKERS, PICTURE, {TOPIC: TOPIC_ID}), 8)
    assert response.error_code == 0
    public = await _metadata(cluster_member, "PLAINTEXT")
    assert [(b.node_id, b.host, b.port, b.rack) for b in public.brokers] == [  # type: ignore[attr-defined]
        (1, "b1.example", 9092, "r1"),
        (2, "b2.example", 9092, "r2"),
    ]
    assert public.controller_id == 1  # type: ignore[attr-defined]
    internal = await _metadata(cluster_member, "INTERNAL")
    assert [(b.node_id, b.host, b.port) for b in internal.brokers] == [  # type: ignore[attr-defined]
        (1, "b1.internal", 19092),
        (2, "b2.internal", 19092),
        (3, "b3.internal", 19092),
    ]


async def test_metadata_partitions_carry_the_controllers_leaders_and_isrs(
    cluster_member: HandlerBroker,
) -> None:
    await cluster_member.call(update_metadata(BROKERS, PICTURE, {TOPIC: TOPIC_ID}), 8)
    response = await _metadata(cluster_member, "PLAINTEXT")
    (topic,) = response.topics  # type: ignore[attr-defined]
    assert (topic.name, topic.topic_id, topic.error_code) == (TOPIC, TOPIC_ID, 0)
    found = {
        p.partition_index: (
            p.error_code,
            p.leader_id,
            p.leader_epoch,
            p.replica_nodes,
            p.isr_nodes,
            p.offline_replicas,
        )
        for p in topic.partitions
    }
    assert found == {
        0: (0, 2, 3, [2, 3, 1], [2, 3, 1], []),
        1: (0, 1, 7, [1, 2, 3], [1, 2], []),
        # broker 3 has no PLAINTEXT listener: its leadership cannot be reached from there
        2: (ErrorCode.LEADER_NOT_AVAILABLE, -1, 1, [3, 1, 2], [3, 1, 2], []),
        3: (ErrorCode.LEADER_NOT_AVAILABLE, -1, 9, [3, 1], [3], [3]),
    }
    internal = await _metadata(cluster_member, "INTERNAL")
    led_by_3 = internal.topics[0].partitions[2]  # type: ignore[attr-defined]
    assert (led_by_3.error_code, led_by_3.leader_id) == (0, 3)


async def test_partial_updates_merge_and_deleted_topics_leave(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(update_metadata(BROKERS, PICTURE, {TOPIC: TOPIC_ID}), 8)
    moved = Partition(TOPIC, 1, leader=2, leader_epoch=8, replicas=[1, 2, 3], isr=[2])
    await cluster_member.call(update_metadata(BROKERS, [moved]), 8)
    partitions = (await _metadata(cluster_member, "PLAINTEXT")).topics[0].partitions  # type: ignore[attr-defined]
    assert [(p.partition_index, p.leader_id, p.leader_epoch) for p in partitions] == [
        (0, 2, 3),
        (1, 2, 8),
        (2, -1, 1),
        (3, -1, 9),
    ]
    deleting = [Partition(TOPIC, i, leader=-2, leader_epoch=0, replicas=[]) for i in range(4)]
    await cluster_member.call(update_metadata(BROKERS, deleting), 8)
    assert (await _metadata(cluster_member, "PLAINTEXT")).topics == []  # type: ignore[attr-defined]
    assert cluster_member.services.cluster.topic_by_id(TOPIC_ID) is None
    by_name = await cluster_member.call(
        # without auto-creation, which a cluster member does through ZooKeeper (the cluster tests)
        MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False),
        12,
        "PLAINTEXT",
    )
    assert by_name.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_a_topic_recreated_under_its_name_gets_the_new_id(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(update_metadata(BROKERS, PICTURE[:1], {TOPIC: TOPIC_ID}), 8)
    new_id = uuid.uuid4()
    await cluster_member.call(update_metadata(BROKERS, PICTURE[:1], {TOPIC: new_id}), 8)
    assert cluster_member.services.cluster.topic_by_id(TOPIC_ID) is None
    assert cluster_member.services.cluster.topic_by_id(new_id).name == TOPIC  # type: ignore[union-attr]


async def test_old_update_metadata_versions_name_listeners_by_security_protocol(
    cluster_member: HandlerBroker,
) -> None:
    # v0 knows one host/port per broker, v1-2 endpoints without listener names: both are PLAINTEXT here.
    for version in (0, 2):
        await cluster_member.call(update_metadata(BROKERS, PICTURE), version)
        brokers = (await _metadata(cluster_member, "PLAINTEXT")).brokers  # type: ignore[attr-defined]
        assert [b.node_id for b in brokers] == [1, 2, 3]
    await cluster_member.call(update_metadata(BROKERS, PICTURE), 3)
    brokers = (await _metadata(cluster_member, "PLAINTEXT")).brokers  # type: ignore[attr-defined]
    assert [b.node_id for b in brokers] == [1, 2]


async def test_describe_cluster_reports_the_real_controller(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(update_metadata(BROKERS, PICTURE, controller_id=3), 8)
    internal = await cluster_member.call(DescribeClusterRequest(), 1, "INTERNAL")
    assert internal.controller_id == 3
    assert [(b.broker_id, b.host, b.rack) for b in internal.brokers] == [
        (1, "b1.internal", "r1"),
        (2, "b2.internal", "r2"),
        (3, "b3.internal", "r3"),
    ]
    # On PLAINTEXT the controller (broker 3) is not among the brokers listed: -1, as Kafka answers.
    public = await cluster_member.call(DescribeClusterRequest(), 1, "PLAINTEXT")
    assert public.controller_id == -1
    assert [b.broker_id for b in public.brokers] == [1, 2]


async def test_find_coordinator_names_the_leader_of_the_groups_offsets_partition(
    cluster_member: HandlerBroker,
) -> None:
    services = cluster_member.services
    groups = GroupCoordinator(
        services.config,
        services.cluster,
        ZkInternalTopics(services.topics, services.cluster),
        services.logs,
        2,
        leadership=services.leadership,
    )
    partitions = groups.settings.offsets_topic_num_partitions
    led_by_1, led_by_3 = "group-on-1", "group-on-3"
    wanted = {groups.runtime.partition_for(led_by_1): 1, groups.runtime.partition_for(led_by_3): 3}
    assert len(wanted) == 2, "pick group ids that land in different partitions"
    offsets = [
        Partition(OFFSETS_TOPIC, i, leader=wanted.get(i, 1), leader_epoch=1, replicas=[1, 3])
        for i in range(partitions)
    ]
    await cluster_member.call(update_metadata(BROKERS, offsets), 8)
    services.groups = groups
    await groups.start()  # the topic is known from the controller: nothing is created here
    try:
        response = await cluster_member.call(
            FindCoordinatorRequest(key_type=0, coordinator_keys=[led_by_1, led_by_3]), 4
        )
        found = {c.key: (c.error_code, c.node_id, c.host) for c in response.coordinators}
        assert found == {
            led_by_1: (0, 1, "b1.example"),
            # broker 3 has no PLAINTEXT listener: clients there cannot reach it yet
            led_by_3: (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, ""),
        }
        internal = await cluster_member.call(FindCoordinatorRequest(key=led_by_3, key_type=0), 3, "INTERNAL")
        assert (internal.error_code, internal.node_id, internal.host) == (0, 3, "b3.internal")
    finally:
        groups.stop()
    assert services.logs.get_log(OFFSETS_TOPIC, 0) is None


async def test_metadata_and_describe_cluster_wait_for_the_first_update_metadata(
    cluster_member: HandlerBroker,
) -> None:
    """Answered before the controller's first UpdateMetadata, they would name no broker and no
    controller, and librdkafka's admin client would never ask again."""
    metadata = asyncio.ensure_future(_metadata(cluster_member, "PLAINTEXT"))
    described = asyncio.ensure_future(cluster_member.call(DescribeClusterRequest(), 1, "PLAINTEXT"))
    await asyncio.sleep(0.2)
    assert not metadata.done() and not described.done()
    await cluster_member.call(update_metadata(BROKERS, PICTURE, {TOPIC: TOPIC_ID}), 8)
    answered = await asyncio.wait_for(metadata, 1)
    assert answered.controller_id == 1  # type: ignore[attr-defined]
    assert [b.node_id for b in answered.brokers] == [1, 2]  # type: ignore[attr-defined]
    assert (await asyncio.wait_for(described, 1)).controller_id == 1


async def test_without_a_controller_metadata_answers_what_it_knows_after_a_bounded_wait(
    cluster_member: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services_module, "FIRST_METADATA_WAIT_S", 0.3)
    started = time.monotonic()
    answered = await _metadata(cluster_member, "PLAINTEXT")
    assert 0.3 <= time.monotonic() - started < 5
    assert answered.brokers == []  # type: ignore[attr-defined]
