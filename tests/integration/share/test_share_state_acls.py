"""The share coordinator's APIs are brokers' requests: under an authorizer they need CLUSTER_ACTION on
the cluster, as Kafka's KafkaApis (FindCoordinator key type SHARE too)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import initialize_share_group_state as init
from odradek.protocol.messages import read_share_group_state_summary as summary
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.security.acl import AclOperation, ResourceType
from tests.support.acls import grant, sasl_client, start_acl_broker
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(90)
DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RawClient]]:
    broker, port = start_acl_broker(
        Path(tmp_path_factory.mktemp("share-acls")) / "data",
        {"share.coordinator.state.topic.num.partitions": "1"},
    )
    opened = {user: sasl_client(port, user) for user in ("admin", "alice", "bob")}
    try:
        admin = opened["admin"]
        topic = CreatableTopic(
            name="orders", num_partitions=1, replication_factor=1, assignments=[], configs=[]
        )
        assert (
            admin.request(CreateTopicsRequest(topics=[topic], timeout_ms=10000), 5).topics[0].error_code == 0
        )
        grant(admin, "User:alice", ResourceType.CLUSTER, "kafka-cluster", AclOperation.CLUSTER_ACTION)
        yield opened
    finally:
        for client in opened.values():
            client.close()
        broker.stop()


def _topic_id(client: RawClient) -> uuid.UUID:
    (topic,) = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 12).topics
    return topic.topic_id


def _initialize(client: RawClient, tid: uuid.UUID) -> int:
    request = init.InitializeShareGroupStateRequest(
        group_id="g",
        topics=[
            init.InitializeStateData(
                topic_id=tid, partitions=[init.PartitionData(partition=0, state_epoch=0, start_offset=0)]
            )
        ],
    )
    return int(client.request(request, 0).results[0].partitions[0].error_code)


def _summary(client: RawClient, tid: uuid.UUID) -> int:
    request = summary.ReadShareGroupStateSummaryRequest(
        group_id="g",
        topics=[
            summary.ReadStateSummaryData(
                topic_id=tid, partitions=[summary.PartitionData(partition=0, leader_epoch=0)]
            )
        ],
    )
    return int(client.request(request, 1).results[0].partitions[0].error_code)


def _find(client: RawClient, key: str) -> int:
    request = FindCoordinatorRequest(key_type=2, coordinator_keys=[key])
    return int(client.request(request, 6).coordinators[0].error_code)


def test_share_state_apis_need_cluster_action(clients: dict[str, RawClient]) -> None:
    tid = _topic_id(clients["admin"])
    key = SharePartitionKey("g", tid, 0).coordinator_key
    bob, alice = clients["bob"], clients["alice"]
    assert (_find(bob, key), _initialize(bob, tid), _summary(bob, tid)) == (DENIED, DENIED, DENIED)
    deadline = time.monotonic() + 30  # the first lookup of a share key makes __share_group_state
    while _find(alice, key) != 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (_find(alice, key), _initialize(alice, tid), _summary(alice, tid)) == (0, 0, 0)
