"""The brokers measured side by side: Apache Kafka 3.9.2 (ZooKeeper mode) and odradek, one or three.

Each deployment is started fresh for one measurement and killed afterwards (its data is thrown away).
Kafka's brokers come from tests/support/kafka_reference.py (the Maven cache's kafka_2.13 3.9.2), with
the heap and collector `kafka-server-start.sh` gives a broker by default; odradek's from
tests/support/broker_process.py with its own defaults. Both kinds get the same server settings (those
of Kafka's reference brokers), odradek's single node without ZooKeeper (it needs none), its cluster on
the same ZooKeeper as Kafka's, each cluster in a chroot of its own.

Start-up time is from the first broker's spawn to the moment every broker answers ApiVersions (both
kinds open their listeners only once started: Kafka after registering in ZooKeeper and loading its
logs). CPU seconds and peak RSS are read from /proc for every broker process of the deployment.
"""

from __future__ import annotations

import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from broker_bench import wire
from broker_bench.peers import sample_process
from tests.support.broker_process import BrokerProcess
from tests.support.kafka_reference import KAFKA_SERVER_START_JVM_OPTIONS, KafkaBrokers
from tests.support.zookeeper import ZooKeeperServer

START_TIMEOUT_S = 180.0
#: Settings only ZooKeeper-mode brokers take; odradek's single node runs without ZooKeeper.
_ZOOKEEPER_ONLY = ("zookeeper.connect", "zookeeper.session.timeout.ms")
KINDS = ("kafka", "odradek")


@dataclass(frozen=True)
class Usage:
    """CPU seconds so far and peak RSS, summed over every broker process of a deployment."""

    cpu_seconds: float
    peak_rss_bytes: int


class Deployment:
    """`brokers` brokers of one kind; `start` returns the start-up seconds."""

    kind = "broker"

    def __init__(self, brokers: int, work: Path, zookeeper: ZooKeeperServer) -> None:
        self.brokers = brokers
        self.work = work
        # One cluster per measurement, in a fresh chroot: nothing of an earlier one is seen.
        chroot = f"/bench-{self.kind}-{uuid.uuid4().hex[:8]}"
        self.reference = KafkaBrokers(
            brokers,
            work / "kafka",
            zookeeper,
            {
                "zookeeper.connect": f"{zookeeper.connect_string}{chroot}",
                "inter.broker.protocol.version": "3.9",
                "group.initial.rebalance.delay.ms": "0",
            },
            jvm_options=KAFKA_SERVER_START_JVM_OPTIONS,
        )

    @property
    def bootstrap(self) -> str:
        return self.reference.bootstrap

    def start(self) -> float:
        started = time.monotonic()
        self._spawn()
        for host, port in self.reference.addresses.values():
            remaining = START_TIMEOUT_S - (time.monotonic() - started)
            wire.wait_until_serving(host, port, remaining, alive=self.alive)
        return time.monotonic() - started

    def usage(self) -> Usage:
        samples = [sample_process(pid) for pid in self.pids()]
        return Usage(sum(s.cpu_seconds for s in samples), sum(s.peak_rss_bytes for s in samples))

    def stop(self) -> None:
        """Killed: the data is thrown away, nothing needs flushing."""
        self._kill()
        shutil.rmtree(self.work, ignore_errors=True)

    def _spawn(self) -> None:
        raise NotImplementedError

    def _kill(self) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    def log_tail(self) -> str:
        raise NotImplementedError


class KafkaDeployment(Deployment):
    kind = "kafka"

    def _spawn(self) -> None:
        for node in self.reference.addresses:
            self.reference.start_broker(node, wait=False)

    def _kill(self) -> None:
        for node in list(self.reference.processes):
            self.reference.kill_broker(node)

    def pids(self) -> list[int]:
        return [process.pid for process in self.reference.processes.values()]

    def alive(self) -> bool:
        processes = self.reference.processes.values()
        return bool(processes) and all(p.poll() is None for p in processes)

    def log_tail(self) -> str:
        logs = sorted((self.work / "kafka").glob("kafka-*.log"))
        return "".join(log.read_text(errors="replace")[-2000:] for log in logs)


class OdradekDeployment(Deployment):
    kind = "odradek"

    def __init__(self, brokers: int, work: Path, zookeeper: ZooKeeperServer) -> None:
        super().__init__(brokers, work, zookeeper)
        self.processes: dict[int, BrokerProcess] = {}
        for node, (host, port) in self.reference.addresses.items():
            settings = {k: v for k, v in self.reference.settings(node).items() if k != "log.dirs"}
            if brokers == 1:
                settings = {k: v for k, v in settings.items() if k not in _ZOOKEEPER_ONLY}
            settings["node.id"] = str(node)
            self.processes[node] = BrokerProcess(work / f"odradek-{node}", settings, port=port, host=host)

    def _spawn(self) -> None:
        for broker in self.processes.values():
            broker.start(wait=False)

    def _kill(self) -> None:
        for broker in self.processes.values():
            broker.kill()

    def pids(self) -> list[int]:
        return [b.process.pid for b in self.processes.values() if b.process is not None]

    def alive(self) -> bool:
        return all(b.process is not None and b.process.poll() is None for b in self.processes.values())

    def log_tail(self) -> str:
        return "".join(b.log_text()[-2000:] for b in self.processes.values())


def deploy(kind: str, brokers: int, work: Path, zookeeper: ZooKeeperServer) -> Deployment:
    if kind == "kafka":
        return KafkaDeployment(brokers, work, zookeeper)
    if kind == "odradek":
        return OdradekDeployment(brokers, work, zookeeper)
    raise ValueError(f"unknown kind {kind}")
