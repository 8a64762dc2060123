"""#29's failed log dir in a mixed cluster: an odradek broker with two log dirs beside two Apache Kafka
3.9 brokers, one of which is controller. One odradek dir fails under acks=all load (a file put where the
directory was): its /log_dir_event_notification must be handled by Kafka's controller as Kafka's own,
which asks the broker (LeaderAndIsr), marks the replicas answered KAFKA_STORAGE_ERROR offline and moves
their leadership; the odradek broker keeps serving its other dir and nothing acknowledged is lost."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_log_dirs import DescribeLogDirsRequest, DescribeLogDirsResponse
from tests.support.interop import wait_until
from tests.support.mixed_clients import ProducerUnderLoad
from tests.support.mixed_cluster import PATIENCE_S, Kind, MixedCluster
from tests.support.raw_client import RawClient
from tests.support.txn_reader import read_committed_values
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(600)

ODRADEK = 3
PARTITIONS = 6


def _state(cluster: MixedCluster, topic: str, partition: int) -> dict[str, Any]:
    data, _ = cluster.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
    parsed: dict[str, Any] = json.loads(data)
    return parsed


def test_kafkas_controller_moves_leadership_off_an_odradek_brokers_failed_log_dir(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = MixedCluster(tmp_path, zookeeper_server, {1: Kind.KAFKA, 2: Kind.KAFKA, 3: Kind.ODRADEK})
    dirs = [tmp_path / "odradek-3-a", tmp_path / "odradek-3-b"]
    broker = cluster.odradek[ODRADEK]
    broker.overrides["log.dirs"] = ",".join(str(d) for d in dirs)
    try:
        cluster.start(first=1)
        assert cluster.controller() == 1
        topic = "mixed-jbod"
        assignment = [[ODRADEK, 1, 2] if p < PARTITIONS // 2 else [1, 2, ODRADEK] for p in range(PARTITIONS)]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
        admin.create_topics([NewTopic(topic, PARTITIONS, replica_assignment=assignment)])[topic].result(30)
        cluster.wait_in_sync(topic, PARTITIONS)
        failing = next(d for d in dirs if any(c.name.startswith(f"{topic}-0") for c in d.iterdir()))
        lost = {int(c.name.rsplit("-", 1)[1]) for c in failing.iterdir() if c.name.startswith(f"{topic}-")}
        assert 0 in lost and len(lost) < PARTITIONS

        load = ProducerUnderLoad(cluster.bootstrap(), topic, PARTITIONS, "mixed-jbod").start()
        try:
            load.wait_acknowledged(300)
            failing.rename(failing.with_name(failing.name + ".gone"))
            failing.write_bytes(b"")

            def moved_away() -> bool:
                return all(
                    _state(cluster, topic, p)["leader"] not in (ODRADEK, -1)
                    and ODRADEK not in _state(cluster, topic, p)["isr"]
                    for p in lost
                )

            wait_until(moved_away, PATIENCE_S, "Kafka's controller to move the failed dir's replicas", 0.3)
            with RawClient(broker.port, timeout=5, host=broker.host) as client:
                described: DescribeLogDirsResponse = client.request(DescribeLogDirsRequest(topics=None), 4)
            codes = {r.log_dir: r.error_code for r in described.results}
            assert codes[str(failing)] == ErrorCode.KAFKA_STORAGE_ERROR
            load.wait_acknowledged(load.acknowledged.count + 300)
        finally:
            acknowledged = load.stop()
        for p in set(range(PARTITIONS)) - lost:
            assert ODRADEK in _state(cluster, topic, p)["isr"], p  # its other dir still replicates
        assert acknowledged.errors == []
        read = read_committed_values(cluster.bootstrap(), topic, PARTITIONS, timeout_s=PATIENCE_S)
        for partition, values in acknowledged.values.items():
            stored = Counter(read[partition])
            assert not [v for v in values if v not in stored], f"acknowledged and lost in {partition}"
    finally:
        cluster.stop()
