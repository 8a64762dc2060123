"""The coordinators' internal topics as each kind of broker makes them (cluster/internal_topics.py):
a single node cuts the replication factor, and min.insync.replicas with it, to its one broker; a
ZooKeeper cluster member refuses more replicas than live brokers and says why (Kafka 3.9's
AutoTopicCreationManager gets INVALID_REPLICATION_FACTOR there, and FindCoordinator answers
COORDINATOR_NOT_AVAILABLE until enough brokers are alive)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.cluster.internal_topics import SingleNodeInternalTopics, ZkInternalTopics
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.metadata.topics import LocalTopicAdmin
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.partition.replica_manager import ReplicaManager
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager

CONFIGS = {"cleanup.policy": "compact", "min.insync.replicas": "2"}


def _admin(tmp_path: Path) -> tuple[LocalTopicAdmin, ClusterMetadata, LogManager]:
    config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
    logs = LogManager([tmp_path], LogConfig.from_mapping(dict(resolve_topic_config({}, config))))
    logs.startup()
    cluster = ClusterMetadata("cluster", 1, [BrokerEndpoint(1, "localhost", 9092)])
    topics = LocalTopicAdmin(config, cluster, logs, 1, ReplicaManager(1, cluster, logs))
    topics.load()
    return topics, cluster, logs


def test_a_single_node_makes_an_internal_topic_of_replication_factor_3_with_one_replica(
    tmp_path: Path,
) -> None:
    topics, cluster, logs = _admin(tmp_path)
    try:
        internal = SingleNodeInternalTopics(topics, cluster)
        assert internal.created_at_startup
        assert asyncio.run(internal.create("__consumer_offsets", 3, 3, CONFIGS)) is None
        made = cluster.topic("__consumer_offsets")
        assert made is not None and made.is_internal
        assert [p.replicas for p in made.partitions] == [[1], [1], [1]]
        assert made.configs["min.insync.replicas"] == "1"
        # made again (another coordinator's try, a restart): it exists, nothing to say
        assert asyncio.run(internal.create("__consumer_offsets", 3, 3, CONFIGS)) is None
    finally:
        logs.shutdown()


def test_a_cluster_member_refuses_more_replicas_than_live_brokers_and_says_why(tmp_path: Path) -> None:
    topics, cluster, logs = _admin(tmp_path)
    try:
        internal = ZkInternalTopics(topics, cluster)
        assert not internal.created_at_startup
        refused = asyncio.run(internal.create("__transaction_state", 2, 3, CONFIGS))
        assert refused == "1 brokers, replication factor 3"
        assert cluster.topic("__transaction_state") is None
        assert asyncio.run(internal.create("__transaction_state", 2, 1, CONFIGS)) is None
        made = cluster.topic("__transaction_state")
        assert made is not None and made.is_internal
        assert made.configs["min.insync.replicas"] == "2"  # not cut: a cluster keeps what was asked
    finally:
        logs.shutdown()
