"""In a ZooKeeper cluster, the 10,000-record limit of one CreatePartitions counted the partitions to add
from the broker's metadata cache, while the growth itself reads the topic from ZooKeeper: a topic written
to ZooKeeper that the controller had not yet announced to this broker counted for nothing, so one
request could grow it by any number of partitions (a principal with ALTER on a topic it just created
could add 50,000 at once). The limit now counts from what ZooKeeper holds, as the growth does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cluster.metadata import BrokerEndpoint, LiveBroker
from odradek.cluster.metadata.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.topics import create_topic, topic_assignment
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from tests.support.handler_services import NODE_ID, HandlerBroker
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def broker(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[HandlerBroker]:
    """A broker whose topic administration is ZooKeeper's, its metadata cache empty of topics."""
    handler_broker = HandlerBroker(tmp_path)
    services = handler_broker.services
    endpoint = BrokerEndpoint(NODE_ID, "127.0.0.1", 9092)
    services.cluster.set_live_brokers([LiveBroker(NODE_ID, {"PLAINTEXT": endpoint})])
    zk = ZooKeeperClient.connect(f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}")
    services.topics = ZkTopicAdmin(handler_broker.config, services.cluster, zk)
    try:
        yield handler_broker
    finally:
        zk.close()
        handler_broker.close()


def grow(broker: HandlerBroker, name: str, count: int) -> ErrorCode:
    request = CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)],
        timeout_ms=30000,
        validate_only=False,
    )
    response = asyncio.run(broker.call(request, 3))
    return ErrorCode(response.results[0].error_code)


def partitions_in_zookeeper(broker: HandlerBroker, name: str) -> int:
    topics = broker.services.topics
    assert isinstance(topics, ZkTopicAdmin)
    found = topic_assignment(topics.zk, name)
    assert found is not None
    return len(found[0].partitions)


def write_topic(broker: HandlerBroker, name: str, partitions: int) -> None:
    topics = broker.services.topics
    assert isinstance(topics, ZkTopicAdmin)
    assignment = TopicAssignmentZnode({p: [NODE_ID] for p in range(partitions)}, topic_id=uuid.uuid4())
    create_topic(topics.zk, name, assignment, {})
    assert broker.services.cluster.topic(name) is None  # the controller has not told this broker yet


def test_create_partitions_past_the_record_limit_of_a_topic_only_zookeeper_holds_is_refused(
    broker: HandlerBroker,
) -> None:
    write_topic(broker, "young", 1)

    assert grow(broker, "young", 10_002) is ErrorCode.POLICY_VIOLATION  # 10,001 partitions to add

    assert partitions_in_zookeeper(broker, "young") == 1


def test_create_partitions_within_the_limit_of_a_topic_only_zookeeper_holds_counts_only_the_added_ones(
    broker: HandlerBroker,
) -> None:
    write_topic(broker, "large", 5_000)

    assert grow(broker, "large", 12_000) is ErrorCode.NONE  # 7,000 to add: within the limit

    assert partitions_in_zookeeper(broker, "large") == 12_000


def test_create_partitions_whose_count_cannot_be_read_from_zookeeper_answers_that_topic_alone(
    broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting reads ZooKeeper now: its failure is that topic's answer, as a failed growth is, not the
    whole request's, and the topic is not grown past a count nobody read."""
    write_topic(broker, "stranded", 1)

    async def unreachable(name: str) -> int | None:
        raise ZooKeeperError("the session expired")

    monkeypatch.setattr(broker.services.topics, "partition_count", unreachable)

    assert grow(broker, "stranded", 3) is ErrorCode.UNKNOWN_SERVER_ERROR
    assert partitions_in_zookeeper(broker, "stranded") == 1
