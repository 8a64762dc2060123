"""The leaders' `min.insync.replicas` is a constructor argument of the replica manager, made before the
topic administration that needs the replica manager (once a hook `server/wiring.py` assigned after
construction): a topic's own setting, else the broker's as AlterConfigs last left it."""

from __future__ import annotations

import uuid
from pathlib import Path

from odradek.cluster.metadata import ClusterMetadata, TopicState
from odradek.cluster.topic_checks import topic_min_insync_replicas
from odradek.config.broker import BrokerConfig
from odradek.partition.hosted_partition import HostedPartition
from odradek.partition.replica_manager import ReplicaManager
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager


def _config(min_insync: int) -> BrokerConfig:
    return BrokerConfig({"node.id": "1", "min.insync.replicas": str(min_insync)}, warn_unknown=False)


def _hosted(topic: str, isr: list[int]) -> HostedPartition:
    return HostedPartition(topic, 0, None, 1, 3, 3, [1, 2, 3], isr, None)  # type: ignore[arg-type]


def test_the_replica_manager_s_leaders_ask_the_lookup_it_was_made_with(tmp_path: Path) -> None:
    cluster = ClusterMetadata("c", -1, [])
    logs = LogManager([tmp_path], LogConfig())
    replicas = ReplicaManager(1, cluster, logs, min_insync_replicas=lambda topic: 3 if topic == "t" else 1)
    assert replicas.leaders.under_min_isr(_hosted("t", [1, 2]))
    assert not replicas.leaders.under_min_isr(_hosted("u", [1, 2]))


def test_a_topic_s_min_insync_replicas_is_its_own_else_the_broker_s_as_it_is_now() -> None:
    cluster = ClusterMetadata("c", -1, [])
    cluster.add_topic(TopicState("own", uuid.uuid4(), [], {"min.insync.replicas": "3"}))
    cluster.add_topic(TopicState("default", uuid.uuid4(), [], {}))
    broker = [_config(2)]
    lookup = topic_min_insync_replicas(lambda: broker[-1], cluster)
    assert (lookup("own"), lookup("default"), lookup("unknown")) == (3, 2, 2)
    broker.append(_config(1))  # AlterConfigs of the broker's default
    assert (lookup("own"), lookup("default")) == (3, 1)
