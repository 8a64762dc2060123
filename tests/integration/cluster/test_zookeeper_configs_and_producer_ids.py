"""Config changes and their notifications, delete-topic markers and producer-id blocks in a real
ZooKeeper, several clients at once as several brokers would."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from odradek.cluster.zookeeper import configs, paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.config_znodes import ConfigChangeNotification
from odradek.cluster.zookeeper.controller_election import elect_controller
from odradek.cluster.zookeeper.errors import TopicAlreadyExistsError, TopicAlreadyMarkedForDeletionError
from odradek.cluster.zookeeper.producer_id_znode import PRODUCER_ID_BLOCK_SIZE, ProducerIdBlock
from odradek.cluster.zookeeper.producer_ids import allocate_producer_id_block
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode


def test_config_changes_are_written_and_notified_in_order(zk: ZooKeeperClient) -> None:
    first = configs.change_entity_config(zk, "topics", "orders", {"retention.ms": "1000"})
    second = configs.change_entity_config(zk, "brokers", paths.DEFAULT_ENTITY, {"log.retention.ms": "5"})
    third = configs.change_entity_config(zk, "topics", "orders", {"cleanup.policy": "compact"})
    assert first < second < third
    assert configs.entity_config(zk, "topics", "orders") == {"cleanup.policy": "compact"}  # replaced whole
    assert configs.entity_config(zk, "brokers", "<default>") == {"log.retention.ms": "5"}
    assert configs.entity_config(zk, "topics", "absent") == {}
    assert configs.config_changes_after(zk, -1) == [
        (first, ConfigChangeNotification("topics/orders")),
        (second, ConfigChangeNotification("brokers/<default>")),
        (third, ConfigChangeNotification("topics/orders")),
    ]
    assert configs.config_changes_after(zk, second) == [(third, ConfigChangeNotification("topics/orders"))]
    assert configs.config_changes_after(zk, third) == []


def test_notifications_from_many_writers_are_read_in_sequence_order(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    writers = [connect_zk() for _ in range(3)]
    writers[0].ensure_persistent_paths()

    def write(client: ZooKeeperClient, index: int) -> None:
        for n in range(10):
            configs.create_config_change_notification(client, f"topics/t{index}-{n}")

    threads = [threading.Thread(target=write, args=(c, i)) for i, c in enumerate(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    changes = configs.config_changes_after(writers[0], -1)
    assert [sequence for sequence, _ in changes] == list(range(30))
    for index in range(3):  # each writer's own notifications in the order it wrote them
        mine = [c.entity_path for _, c in changes if c.entity_path.startswith(f"topics/t{index}-")]
        assert mine == [f"topics/t{index}-{n}" for n in range(10)]


def test_create_topic_writes_its_config_then_its_assignment(zk: ZooKeeperClient) -> None:
    topics.create_topic(zk, "plain", TopicAssignmentZnode({0: [1]}), {})
    topics.create_topic(
        zk, "compacted", TopicAssignmentZnode({0: [1], 1: [2]}), {"cleanup.policy": "compact"}
    )
    assert configs.entity_config(zk, "topics", "plain") == {}
    assert zk.read(paths.config_entity("topics", "plain")) is not None  # written even when empty, as Kafka
    assert configs.entity_config(zk, "topics", "compacted") == {"cleanup.policy": "compact"}
    assert topics.topic_names(zk) == ["compacted", "plain"]
    with pytest.raises(TopicAlreadyExistsError):
        topics.create_topic(zk, "plain", TopicAssignmentZnode({0: [2]}), {"retention.ms": "1"})
    assert configs.entity_config(zk, "topics", "plain") == {}  # refused before anything was written
    assert configs.config_changes_after(zk, -1) == []  # a new topic's config is no change


def test_delete_topic_marker_and_the_controllers_deletion(zk: ZooKeeperClient) -> None:
    fence = elect_controller(zk, 1)
    topics.create_topic_assignment(zk, "gone", TopicAssignmentZnode({0: [1], 1: [1]}))
    with pytest.raises(TopicAlreadyExistsError):
        topics.create_topic_assignment(zk, "gone", TopicAssignmentZnode({0: [1]}))
    topics.create_partition_states(
        fence, "gone", {p: PartitionStateZnode(1, 0, [1], fence.epoch) for p in (0, 1)}
    )
    configs.change_entity_config(zk, "topics", "gone", {"retention.ms": "1"})
    topics.mark_topic_for_deletion(zk, "gone")
    with pytest.raises(TopicAlreadyMarkedForDeletionError):
        topics.mark_topic_for_deletion(zk, "gone")
    assert topics.topics_marked_for_deletion(zk) == ["gone"]
    topics.delete_topic_znodes(fence, "gone")
    assert topics.topic_names(zk) == []
    assert topics.topics_marked_for_deletion(zk) == []
    assert zk.read(paths.config_entity("topics", "gone")) is None


def test_producer_id_blocks_from_several_brokers_never_overlap(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    brokers = [connect_zk() for _ in range(3)]
    brokers[0].ensure_persistent_paths()  # /latest_producer_id_block exists, with no data, as in Kafka
    blocks: list[ProducerIdBlock] = []
    lock = threading.Lock()

    def allocate(broker_id: int, client: ZooKeeperClient) -> None:
        for _ in range(15):
            block = allocate_producer_id_block(client, broker_id)
            with lock:
                blocks.append(block)

    threads = [threading.Thread(target=allocate, args=(i, c)) for i, c in enumerate(brokers, start=1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    starts = sorted(block.first_producer_id for block in blocks)
    assert starts == [n * PRODUCER_ID_BLOCK_SIZE for n in range(45)]  # contiguous, none given twice
    assert all(block.size == PRODUCER_ID_BLOCK_SIZE for block in blocks)


def test_the_first_block_is_allocated_when_the_znode_is_missing(zk: ZooKeeperClient) -> None:
    zk.kazoo.delete(paths.LATEST_PRODUCER_ID_BLOCK)
    assert allocate_producer_id_block(zk, 4) == ProducerIdBlock(4, 0)
    assert allocate_producer_id_block(zk, 5) == ProducerIdBlock(5, 1000)
