"""The three-broker cluster the cluster benches run on: one ZooKeeper and brokers 1-3 on 127.0.0.2-4,
each a real broker process with its data in a throwaway directory (shared by replication_bench.py and
failover_bench.py so both measure the same set-up)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.broker_process import BrokerProcess
from tests.support.zookeeper import ZooKeeperServer

BROKERS = (1, 2, 3)
#: The chroot every bench broker registers under.
CHROOT = "/bench"


@dataclass
class BenchCluster:
    zookeeper: ZooKeeperServer
    brokers: dict[int, BrokerProcess]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    @property
    def zookeeper_connect(self) -> str:
        """The connect string with the brokers' chroot, for a kazoo client watching them."""
        return f"{self.zookeeper.connect_string}{CHROOT}"


@contextmanager
def bench_cluster(prefix: str, overrides: dict[str, str] | None = None) -> Iterator[BenchCluster]:
    """Start ZooKeeper and the brokers (each with `overrides`); stop them all on the way out."""
    with tempfile.TemporaryDirectory(prefix=prefix) as base:
        zookeeper = ZooKeeperServer(Path(base)).start()
        brokers = {
            node: BrokerProcess(
                Path(base) / f"broker-{node}",
                {
                    "node.id": str(node),
                    "zookeeper.connect": f"{zookeeper.connect_string}{CHROOT}",
                    "offsets.topic.replication.factor": "1",
                    "min.insync.replicas": "2",
                    "auto.leader.rebalance.enable": "false",
                    **(overrides or {}),
                },
                host=f"127.0.0.{node + 1}",
            )
            for node in BROKERS
        }
        try:
            for broker in brokers.values():
                broker.start()
            yield BenchCluster(zookeeper, brokers)
        finally:
            for broker in brokers.values():
                broker.stop()
            zookeeper.stop()
