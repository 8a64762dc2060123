"""Apache Kafka 4.x's own brokers in KRaft mode, from Maven's jars: the reference for what only a Kafka
4.x broker serves (share groups, DescribeTopicPartitions, client telemetry, ...), which Kafka 3.9 in
ZooKeeper mode (tests/support/kafka_reference.py) cannot check.

Each node is a combined broker and controller (`process.roles=broker,controller`) with a static quorum
of all of them, its log directory formatted first by Kafka's storage tool (`kafka-storage.sh format`),
as the quick start does. The jars are those of Kafka's 4.x tools (tests/support/kafka_tools.py's
`kafka-4` line: `kafka_2.13` and everything it brings), so nothing else is resolved. One node listens on
127.0.0.1, three on 127.0.0.2-4, as odradek's targets do; each gets the settings odradek's targets get
(java_suite.SINGLE_NODE_SETTINGS) and any the caller adds.

    .venv/bin/python -m tests.support.kafka_kraft_reference [--brokers 3]   # start, print, wait for ^C
"""

from __future__ import annotations

import argparse
import base64
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.support import java_suite, kafka_tools
from tests.support.broker_process import _die_with_parent
from tests.support.kafka_reference import KAFKA_JVM_OPTIONS, ReferenceNodes
from tests.support.ports import free_port
from tests.support.requirements import require_executable

LINE = "kafka-4"
LOG4J2 = """\
status = error
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = STDOUT
"""
FORMAT_TIMEOUT_S = 120
#: Every security protocol under its own name, and the quorum's listener in plain text.
PROTOCOL_MAP = (
    "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)
#: A metrics reporter offering a client telemetry exporter (KIP-714), which Kafka needs to serve
#: GetTelemetrySubscriptions and PushTelemetry at all; odradek always serves them (its own receiver).
TELEMETRY_SINK = Path(__file__).resolve().parent / "kraft_plugins/odradek/reference/TelemetrySink.java"
TELEMETRY_SINK_CLASS = "odradek.reference.TelemetrySink"


def _cluster_id() -> str:
    """A random cluster id as Kafka makes them (kafka-storage random-uuid): never starting with "-",
    which kafka-storage's argument parser would take for an option (one id in 32 did)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


class KafkaKRaftBrokers(ReferenceNodes):
    """`brokers` Apache Kafka 4.x nodes (ids 1..n, each broker and controller) in one KRaft quorum;
    `start` formats their log directories once and waits until each listens."""

    def __init__(
        self,
        brokers: int,
        work: Path,
        extra: Mapping[str, str] | None = None,
        node_settings: Callable[[int, int], Mapping[str, str]] | None = None,
        features: Sequence[str] = (),
        jvm_options: Sequence[str] = KAFKA_JVM_OPTIONS,
    ) -> None:
        """`extra`: settings for every node; `node_settings`: for one node, given its id and PLAINTEXT
        port (they win over `extra`); `features`: `name=level` given to the storage tool's `--feature`
        (e.g. `share.version=1` where a release does not enable share groups by default)."""
        super().__init__(brokers, work)
        self.extra = dict(extra or {})
        self.node_settings = node_settings
        self.features = tuple(features)
        self.jvm_options = tuple(jvm_options)
        self.installation = kafka_tools.install(LINE)
        self.controller_ports = {node: free_port() for node in self.addresses}
        self.cluster_id = _cluster_id()
        self._formatted: set[int] = set()

    def start_broker(self, node: int, wait: bool = True) -> None:
        if node not in self._formatted:
            self._format(node)
        super().start_broker(node, wait)

    def stop(self) -> None:
        # the last nodes of a quorum wait for a majority to shut down cleanly: stop them in parallel
        for process in self.processes.values():
            process.terminate()
        super().stop()

    def settings(self, node: int) -> dict[str, str]:
        """What node `node`'s server.properties holds."""
        brokers = len(self.addresses)
        replication = min(brokers, 3)
        host, port = self.addresses[node]
        voters = ",".join(
            f"{other}@{self.addresses[other][0]}:{self.controller_ports[other]}" for other in self.addresses
        )
        settings = {
            **java_suite.SINGLE_NODE_SETTINGS,
            "process.roles": "broker,controller",
            "node.id": str(node),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{self.controller_ports[node]}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": PROTOCOL_MAP,
            "log.dirs": str(self.log_dir(node)),
            "offsets.topic.replication.factor": str(replication),
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": str(min(replication, 2)),
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": str(min(replication, 2)),
            "auto.leader.rebalance.enable": "false",
            "metric.reporters": TELEMETRY_SINK_CLASS,
        }
        if brokers > 1:
            settings |= {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}
        settings |= self.extra
        if self.node_settings is not None:
            settings |= self.node_settings(node, port)
        controller = f"CONTROLLER://{host}:{self.controller_ports[node]}"
        if controller not in settings["listeners"]:  # a caller's listeners: the quorum still needs its own
            settings["listeners"] += f",{controller}"
        return settings

    def _java(self, main: Sequence[str]) -> list[str]:
        log4j2 = self.work / "log4j2.properties"
        log4j2.write_text(LOG4J2)
        return [
            require_executable("java"),
            *self.jvm_options,
            f"-Dlog4j2.configurationFile={log4j2}",
            "-cp",
            f"{self.installation.classpath}:{self._plugins()}",
            *main,
        ]

    def _plugins(self) -> Path:
        """The reference's own plugins (TELEMETRY_SINK), compiled once into the work directory."""
        classes = self.work / "plugins"
        if not (classes / "odradek/reference/TelemetrySink.class").exists():
            compiled = subprocess.run(
                [
                    require_executable("javac"),
                    "-cp",
                    self.installation.classpath,
                    "-d",
                    str(classes),
                    str(TELEMETRY_SINK),
                ],
                capture_output=True,
                text=True,
                timeout=FORMAT_TIMEOUT_S,
                check=False,
            )
            if compiled.returncode != 0:
                raise RuntimeError(f"compiling {TELEMETRY_SINK.name} failed:\n{compiled.stderr}")
        return classes

    def _format(self, node: int) -> None:
        """`kafka-storage.sh format -t <cluster id> -c server.properties [--feature ...]`."""
        config = self.config_file(node)
        features = [argument for feature in self.features for argument in ("--feature", feature)]
        command = self._java(["kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(config)])
        formatted = subprocess.run(
            [*command, *features], capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S, check=False
        )
        if formatted.returncode != 0:
            output = formatted.stdout + formatted.stderr
            raise RuntimeError(f"kafka-storage format of node {node} failed:\n{output}")
        self._formatted.add(node)

    def _launch(self, node: int) -> subprocess.Popen[bytes]:
        config = self.config_file(node)
        with open(self.work / f"kafka-{node}.log", "ab") as log:
            return subprocess.Popen(
                self._java(["kafka.Kafka", str(config)]),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", type=int, choices=(1, 3), default=1)
    parser.add_argument("--feature", action="append", default=[], help="name=level for the storage tool")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kafka-kraft-"))
    kafka = KafkaKRaftBrokers(args.brokers, work, features=args.feature)
    try:
        kafka.start()
        print(f"Apache Kafka {LINE} (KRaft) at {kafka.bootstrap}; data and logs in {work}", flush=True)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        kafka.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
