"""Apache Kafka 3.9's own brokers in ZooKeeper mode, from Maven's jars: what the Java suite
(tests/support/java_reference.py) and Kafka's tools (tests/support/kafka_tools_reference.py) are checked
against before they assert anything of odradek.

Kafka's broker (`kafka_2.13`, tests/compat/java/reference-broker/pom.xml) is resolved into .cache/maven
like the clients; ZooKeeper is Debian's, as for the cluster tests. One broker listens on 127.0.0.1,
three on 127.0.0.2-4, as odradek's targets do; each gets the settings odradek's targets get
(java_suite.SINGLE_NODE_SETTINGS; tests/support/txn_cluster.py for three) and any the caller adds.
"""

from __future__ import annotations

import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Self

from tests.support import java_suite
from tests.support.broker_process import _die_with_parent
from tests.support.ports import free_port
from tests.support.requirements import require_executable
from tests.support.zookeeper import ZooKeeperServer

REFERENCE_PROJECT = java_suite.PROJECT / "reference-broker"
CLASSPATH = java_suite.PROJECT / "target" / "reference-broker" / "classpath.txt"
KAFKA_JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC")
#: kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS (Kafka 3.9), for its brokers and tools alike.
KAFKA_JVM_PERFORMANCE_OPTIONS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
#: kafka-server-start.sh's KAFKA_HEAP_OPTS with the options above: Kafka 3.9's defaults for a broker
#: started by its own scripts, what the benchmarks give Kafka.
KAFKA_SERVER_START_JVM_OPTIONS = ("-Xmx1G", "-Xms1G", *KAFKA_JVM_PERFORMANCE_OPTIONS)
LOG4J = "log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n" + (
    "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
)
START_TIMEOUT_S = 120


class ReferenceNodes(ABC):
    """Apache Kafka JVMs, one per node id (1..n) at `addresses`, with what every kind of reference
    shares: starting them and waiting until each listens, SIGKILL, controlled shutdown, their
    server.properties written from `settings`."""

    def __init__(self, brokers: int, work: Path) -> None:
        self.work = work
        self.addresses = {node: (broker_host(node, brokers), free_port()) for node in range(1, brokers + 1)}
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @abstractmethod
    def settings(self, node: int) -> dict[str, str]:
        """What node `node`'s server.properties holds."""

    @abstractmethod
    def _launch(self, node: int) -> subprocess.Popen[bytes]:
        """Node `node`'s JVM, started."""

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{host}:{port}" for host, port in self.addresses.values())

    def log_dir(self, node: int) -> Path:
        return self.work / f"data-{node}"

    def start(self) -> Self:
        for node in self.addresses:
            self.start_broker(node, wait=False)
        for node in self.addresses:
            self.wait_listening(node)
        return self

    def start_broker(self, node: int, wait: bool = True) -> None:
        self.processes[node] = self._launch(node)
        if wait:
            self.wait_listening(node)

    def kill_broker(self, node: int) -> None:
        """SIGKILL, as a crash: no controlled shutdown, nothing flushed."""
        process = self.processes.pop(node, None)
        if process is not None:
            process.kill()
            process.wait()

    def stop_broker(self, node: int, timeout: float = 60.0) -> None:
        """SIGTERM, as `kafka-server-stop.sh`: a controlled shutdown."""
        process = self.processes.pop(node, None)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop(self) -> None:
        for node in list(self.processes):
            self.stop_broker(node, timeout=30)

    def config_file(self, node: int) -> Path:
        """Node `node`'s server.properties, written from `settings`."""
        self.work.mkdir(parents=True, exist_ok=True)
        config = self.work / f"server-{node}.properties"
        config.write_text("".join(f"{key}={value}\n" for key, value in self.settings(node).items()))
        return config

    def wait_listening(self, node: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes.values()):
                raise RuntimeError(f"an Apache Kafka node exited at start-up (see {self.work}/kafka-N.log)")
            try:
                with socket.create_connection(self.addresses[node], timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        address = self.addresses[node]
        raise RuntimeError(f"Apache Kafka did not listen on {address} within {START_TIMEOUT_S} s")


class KafkaBrokers(ReferenceNodes):
    """`brokers` Apache Kafka brokers (ids 1..n) on one ZooKeeper; `start` waits until each listens."""

    def __init__(
        self,
        brokers: int,
        work: Path,
        zookeeper: ZooKeeperServer,
        extra: Mapping[str, str] | None = None,
        node_settings: Callable[[int, int], Mapping[str, str]] | None = None,
        jvm_options: Sequence[str] = KAFKA_JVM_OPTIONS,
    ) -> None:
        """`extra`: settings for every broker; `node_settings`: for one broker, given its node id and
        PLAINTEXT port (they win over `extra`); `jvm_options`: the heap and collector (the benchmark
        gives the ones `kafka-server-start.sh` would)."""
        super().__init__(brokers, work)
        self.zookeeper = zookeeper
        self.extra = dict(extra or {})
        self.node_settings = node_settings
        self.jvm_options = tuple(jvm_options)
        self.classpath = reference_classpath()

    def settings(self, node: int) -> dict[str, str]:
        """What broker `node`'s server.properties holds (a mixed cluster gives odradek the same)."""
        brokers = len(self.addresses)
        replication = min(brokers, 3)
        host, port = self.addresses[node]
        settings = {
            **java_suite.SINGLE_NODE_SETTINGS,
            "broker.id": str(node),
            "listeners": f"PLAINTEXT://{host}:{port}",
            "log.dirs": str(self.log_dir(node)),
            "zookeeper.connect": f"{self.zookeeper.connect_string}/kafka",
            "zookeeper.session.timeout.ms": "6000",
            "offsets.topic.replication.factor": str(replication),
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": str(min(replication, 2)),
            "auto.leader.rebalance.enable": "false",
        }
        if brokers > 1:  # as tests/support/txn_cluster.py
            settings |= {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}
        settings |= self.extra
        if self.node_settings is not None:
            settings |= self.node_settings(node, port)
        return settings

    def _launch(self, node: int) -> subprocess.Popen[bytes]:
        config = self.config_file(node)
        log4j = self.work / "log4j.properties"
        log4j.write_text(LOG4J)
        java = require_executable("java")
        main = ["kafka.Kafka", str(config)]
        with open(self.work / f"kafka-{node}.log", "ab") as log:
            return subprocess.Popen(
                [
                    java,
                    *self.jvm_options,
                    f"-Dlog4j.configuration={log4j.as_uri()}",
                    "-cp",
                    self.classpath,
                    *main,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )


def broker_host(node: int, brokers: int) -> str:
    """Where broker `node` of `brokers` listens: 127.0.0.1 alone, 127.0.0.2-4 for three."""
    return "127.0.0.1" if brokers == 1 else f"127.0.0.{node + 1}"


def reference_classpath() -> str:
    """kafka_2.13's class path, resolved on first use."""
    with java_suite.locked(java_suite.MAVEN_REPOSITORY.parent / "java-compat.lock"):
        if not CLASSPATH.exists():
            mvn = require_executable("mvn")
            subprocess.run(
                [
                    mvn,
                    "-q",
                    "-B",
                    f"-Dmaven.repo.local={java_suite.MAVEN_REPOSITORY}",
                    "dependency:build-classpath",
                    f"-Dmdep.outputFile={CLASSPATH}",
                ],
                cwd=REFERENCE_PROJECT,
                check=True,
                timeout=java_suite.BUILD_TIMEOUT_S,
            )
    return CLASSPATH.read_text().strip()
