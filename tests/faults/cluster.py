"""The cluster under test: one ZooKeeper and 3-5 broker processes, with the proxies that can cut them.

Broker N listens on 127.0.0.(N+1) twice: CLIENT for the harness's producers and consumers, BROKER
(inter.broker.listener.name) for the controller's requests and replica fetches, advertised as the
address of its proxy (link_proxy.py). Its ZooKeeper connection goes through a proxy of its own.
Timeouts are short, so that a fault is noticed within seconds: ZooKeeper sessions of 6 s (tickTime
500 ms), replica lag 3 s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

from tests.faults.link_proxy import LinkProxies
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.zookeeper import ZooKeeperServer

SESSION_TIMEOUT_MS = 6000
REPLICA_LAG_TIME_MAX_MS = 3000
TOPIC = "faults"
PARTITIONS = 6
REPLICATION_FACTOR = 3
MIN_INSYNC_REPLICAS = 2


class FaultCluster:
    """Start with `start()`, always end with `close()` (it also undoes every cut and pause)."""

    def __init__(self, base: Path, brokers: int = 3) -> None:
        if not 3 <= brokers <= 5:
            raise ValueError("the harness runs 3 to 5 brokers")
        self.base = base
        self.ids = list(range(1, brokers + 1))
        self.zookeeper = ZooKeeperServer(base / "zookeeper")
        self.proxies = LinkProxies(self.broker_pids)
        self.brokers: dict[int, BrokerProcess] = {}
        self.paused: set[int] = set()
        self.chroot = f"/odradek-faults-{uuid.uuid4().hex[:8]}"
        self._admin: Any = None
        self._kazoo: Any = None

    # ----- life cycle ----------------------------------------------------------------------------

    def start(self) -> FaultCluster:
        (self.base / "zookeeper").mkdir(parents=True, exist_ok=True)
        self.zookeeper.start()
        for node in self.ids:
            self.brokers[node] = self._broker(node)
        for broker in self.brokers.values():
            broker.start(timeout=60)
        self.wait_for(lambda: self.registered() == set(self.ids), 60, "every broker registered")
        # A broker answers Metadata before the controller's first UpdateMetadata reaches it (no other
        # broker, no controller; Kafka's too), and librdkafka's admin client, told of no controller,
        # holds its CreateTopics until its request timeout (60 s, seen once under load).
        self.wait_for(self.every_broker_knows_the_cluster, 60, "every broker's metadata of the cluster")
        return self

    def heal_all(self) -> None:
        """Undo whatever a fault left behind: cuts healed, paused brokers resumed, stopped ones restarted."""
        self.proxies.heal()
        for node in list(self.paused):
            self.resume(node)
        for node in self.ids:
            if node not in self.running():
                self.restart(node)

    def close(self) -> None:
        """Stop everything this cluster started; safe to call more than once and after a failure."""
        with contextlib.suppress(Exception):
            self.proxies.heal()
        for node in list(self.paused):
            self.resume(node)
        for broker in self.brokers.values():
            with contextlib.suppress(Exception):
                broker.stop(timeout=10)
        self.proxies.close()
        if self._kazoo is not None:
            with contextlib.suppress(Exception):
                self._kazoo.stop()
                self._kazoo.close()
        self.zookeeper.stop()

    def _broker(self, node: int) -> BrokerProcess:
        host = f"127.0.0.{node + 1}"
        client_port, broker_port = free_port(), free_port()
        zookeeper_proxy = self.proxies.to_zookeeper(node, "127.0.0.1", self.zookeeper.port)
        broker_proxy = self.proxies.to_broker(node, host, broker_port)
        overrides = {
            "node.id": str(node),
            "listeners": f"CLIENT://{host}:{client_port},BROKER://{host}:{broker_port}",
            "advertised.listeners": f"CLIENT://{host}:{client_port},BROKER://127.0.0.1:{broker_proxy}",
            "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:PLAINTEXT",
            "inter.broker.listener.name": "BROKER",
            "zookeeper.connect": f"127.0.0.1:{zookeeper_proxy}{self.chroot}",
            "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            "replica.lag.time.max.ms": str(REPLICA_LAG_TIME_MAX_MS),
            "default.replication.factor": str(REPLICATION_FACTOR),
            "min.insync.replicas": str(MIN_INSYNC_REPLICAS),
            "offsets.topic.replication.factor": str(min(3, len(self.ids))),
            "offsets.topic.num.partitions": "3",
            "unclean.leader.election.enable": "false",
            "auto.leader.rebalance.enable": "false",
            "controlled.shutdown.retry.backoff.ms": "500",
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
        }
        return BrokerProcess(self.base / f"broker-{node}", overrides, port=client_port, host=host)

    # ----- what the cluster looks like -----------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(self.brokers[n].bootstrap for n in self.ids)

    def running(self) -> list[int]:
        return [n for n, b in self.brokers.items() if b.process is not None and b.process.poll() is None]

    def broker_pids(self) -> dict[int, int]:
        return {b.process.pid: n for n, b in self.brokers.items() if b.process is not None}

    def metadata(self, topic: str = TOPIC, timeout: float = 5.0) -> Any:
        """confluent-kafka's ClusterMetadata of the topic, from any broker that answers."""
        from confluent_kafka.admin import AdminClient

        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin.list_topics(topic, timeout=timeout)

    def registered(self) -> set[int]:
        with contextlib.suppress(Exception):
            return set(self.metadata().brokers)
        return set()

    def registered_in_zookeeper(self, node: int) -> bool:
        """Whether `/brokers/ids/<node>` exists, asked of ZooKeeper directly (not through any proxy):
        it goes when the broker's session expires."""
        from kazoo.client import KazooClient

        if self._kazoo is None:
            self._kazoo = KazooClient(hosts=f"{self.zookeeper.connect_string}{self.chroot}", timeout=10)
            self._kazoo.start(30)
        return self._kazoo.exists(f"/brokers/ids/{node}") is not None

    def controller(self) -> int:
        return int(self.metadata().controller_id)

    def partitions(self, topic: str = TOPIC) -> dict[int, Any]:
        """Partition -> confluent-kafka PartitionMetadata (leader, replicas, isrs)."""
        return dict(self.metadata(topic).topics[topic].partitions)

    def healthy(self, topic: str = TOPIC) -> bool:
        """Every broker registered and every partition led, with its whole replica set in sync."""
        try:
            metadata = self.metadata(topic)
            partitions = metadata.topics[topic].partitions
        except Exception:
            return False
        if set(metadata.brokers) != set(self.ids) or not partitions:
            return False
        return all(p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in partitions.values())

    def every_broker_knows_the_cluster(self) -> bool:
        """Each broker's own Metadata names every broker and a controller."""
        from confluent_kafka.admin import AdminClient

        for node in self.ids:
            try:
                seen = AdminClient({"bootstrap.servers": self.brokers[node].bootstrap}).list_topics(timeout=5)
            except Exception:
                return False
            if set(seen.brokers) != set(self.ids) or seen.controller_id < 0:
                return False
        return True

    def led(self, topic: str = TOPIC) -> bool:
        """Every partition has a leader (the ISR may still be short)."""
        try:
            partitions = self.partitions(topic)
        except Exception:
            return False
        return bool(partitions) and all(p.leader >= 0 for p in partitions.values())

    @staticmethod
    def wait_for(predicate: Any, timeout: float, what: str) -> float:
        """Poll until `predicate()`; returns the seconds it took; raises TimeoutError after `timeout`."""
        started = time.monotonic()
        while not predicate():
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{what}: not within {timeout:.0f} s")
            time.sleep(0.25)
        return time.monotonic() - started

    def create_topic(self, name: str = TOPIC, partitions: int = PARTITIONS) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topic = NewTopic(
            name,
            partitions,
            REPLICATION_FACTOR,
            config={"min.insync.replicas": str(MIN_INSYNC_REPLICAS)},
        )
        admin.create_topics([topic], operation_timeout=30)[name].result(60)
        self.wait_for(lambda: self.led(name), 60, f"leaders for {name}")

    # ----- what faults do to a broker ------------------------------------------------------------

    def kill(self, node: int) -> None:
        self.resume(node)
        self.brokers[node].kill()

    def terminate(self, node: int) -> None:
        """A clean stop (SIGTERM): controlled shutdown, clean-shutdown marker written."""
        self.resume(node)
        self.brokers[node].stop(timeout=60)

    def restart(self, node: int, timeout: float = 60.0) -> None:
        """Start a stopped broker again; after a kill it waits by itself until its old ZooKeeper
        session (and so its registration) has expired and it may register again."""
        self.brokers[node].start(timeout=timeout)

    def pause(self, node: int) -> None:
        process = self.brokers[node].process
        if process is not None:
            os.kill(process.pid, signal.SIGSTOP)
            self.paused.add(node)

    def resume(self, node: int) -> None:
        process = self.brokers[node].process
        if node in self.paused and process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)
        self.paused.discard(node)

    def log_dir(self, node: int) -> Path:
        return self.brokers[node].data_dir
