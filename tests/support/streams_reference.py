"""The Kafka Streams scenario (tests/support/streams_scenario.py) against Apache Kafka 3.9 itself, three
brokers in ZooKeeper mode: the check of the scenario, not of odradek. What the test asserts of odradek
must hold here first.

    .venv/bin/python -m tests.support.streams_reference [--keep DIR]

The brokers are tests/support/java_reference.py's (kafka_2.13 3.9.2 from .cache/maven, Debian's
ZooKeeper, 127.0.0.2-4, the settings odradek's cluster gets); a killed broker starts again on its data.
Exits 0 when the scenario passed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import java_reference, streams_scenario
from tests.support.ports import free_port
from tests.support.zookeeper import ZooKeeperServer

BROKERS = 3


class KafkaCluster:
    """Apache Kafka's brokers as `streams_scenario.Brokers`."""

    def __init__(self, work: Path, zookeeper: ZooKeeperServer) -> None:
        self.work = work
        self.zookeeper = zookeeper
        self.classpath = java_reference._reference_classpath()
        self.addresses = {node: (f"127.0.0.{node + 1}", free_port()) for node in range(1, BROKERS + 1)}
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{host}:{port}" for host, port in self.addresses.values())

    def start(self) -> None:
        for node in self.addresses:
            self.processes[node] = self._launch(node)
        for address in self.addresses.values():
            java_reference._wait_listening(address, list(self.processes.values()))

    def kill(self, node: int) -> None:
        process = self.processes.pop(node)
        process.kill()
        process.wait()

    def restart(self, node: int) -> None:
        self.processes[node] = self._launch(node)
        java_reference._wait_listening(self.addresses[node], list(self.processes.values()))

    def stop(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def _launch(self, node: int) -> subprocess.Popen[bytes]:
        return java_reference._start_broker(
            node, self.addresses[node], BROKERS, self.zookeeper, self.classpath, self.work
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", type=Path, help="keep the brokers' data and logs and the instances' here")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="streams-reference-"))
    work.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(work).start()
    cluster = KafkaCluster(work, zookeeper)
    try:
        cluster.start()
        print(f"Apache Kafka 3.9, {BROKERS} brokers at {cluster.bootstrap}", flush=True)
        streams_scenario.run(cluster, work / "streams")
        print("the Streams scenario passed against Apache Kafka", flush=True)
        return 0
    except (AssertionError, RuntimeError, pytest.fail.Exception, pytest.skip.Exception) as failure:
        print(f"the Streams scenario failed against Apache Kafka: {failure}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
        zookeeper.stop()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
