"""A cluster member reads the dynamic broker configs in ZooKeeper (/config/brokers) before it loads its
logs, as Kafka 3.9's KafkaServer.startup initialises them before its LogManager: a setting that acts
while the logs load applies to that load."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from odradek.cluster.zookeeper import paths, topics
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import set_entity_config
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.config.broker import BrokerConfig
from odradek.server.broker import Broker
from tests.support.broker_process import free_port

TOPIC = "loaded"


def test_the_cluster_defaults_written_while_the_broker_was_down_apply_to_the_logs_it_loads(
    zookeeper_connect: str, connect_zk: Callable[[], ZooKeeperClient], tmp_path: Path
) -> None:
    """log.index.interval.bytes is the loaded active segment's (odradek read /config/brokers after the
    load, so the segment kept the file's 4096 until it rolled), and producer.id.expiration.ms the
    loaded logs' (it was applied only at the next change of /config/brokers)."""
    port = free_port()
    config = BrokerConfig(
        {
            "node.id": "1",
            "zookeeper.connect": zookeeper_connect,
            "zookeeper.session.timeout.ms": "3000",
            "listeners": f"PLAINTEXT://127.0.0.2:{port}",
            "log.dirs": str(tmp_path / "logs"),
            "offsets.topic.replication.factor": "1",
            "controlled.shutdown.enable": "false",
        }
    )
    zk = connect_zk()

    async def main() -> tuple[int, int]:
        first = Broker(config)
        await first.start()
        try:
            assignment = TopicAssignmentZnode({0: [1]}, uuid.uuid4())
            await asyncio.to_thread(topics.create_topic, zk, TOPIC, assignment, {})
            deadline = time.monotonic() + 60
            while first.logs.get_log(TOPIC, 0) is None:
                assert time.monotonic() < deadline, "the broker never made the partition's log"
                await asyncio.sleep(0.1)
        finally:
            await first.stop()
        defaults = {"log.index.interval.bytes": "1", "producer.id.expiration.ms": "60000"}
        await asyncio.to_thread(set_entity_config, zk, paths.BROKER_CONFIG, paths.DEFAULT_ENTITY, defaults)
        again = Broker(config)
        await again.start()
        try:
            loaded = again.logs.get_log(TOPIC, 0)
            assert loaded is not None
            return loaded.active_segment.index_interval_bytes, again.logs.producer_id_expiration_ms
        finally:
            await again.stop()

    assert asyncio.run(main()) == (1, 60_000)
