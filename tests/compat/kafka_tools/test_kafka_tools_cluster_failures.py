"""Apache Kafka's command-line tools (the lines of kafka_tools_reference.TESTED_LINES: 4.x) against
odradek's 3-broker ZooKeeper cluster: the scenarios of tests/support/tool_scenarios that stop and start
brokers (an unclean election), on a cluster of their own (one per tool line), each printing what it
prints against Apache Kafka 3.9's three brokers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import kafka_tools_reference
from tests.support.kafka_tools_reference import LineTargets
from tests.support.tool_scenarios.targets import OdradekCluster
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
pytestmark = pytest.mark.timeout(1200)  # the first test resolves the tools from Maven Central
KIND = "cluster"


@pytest.fixture(scope="module")
def targets(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LineTargets]:
    def cluster(line: str) -> OdradekCluster:
        connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
        return OdradekCluster(tmp_path_factory.mktemp(f"kafka-tools-cluster-failures-{line}"), connect)

    started = LineTargets(cluster)
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.parametrize(("line", "name"), kafka_tools_reference.pytest_params(KIND, disruptive=True))
def test_kafka_tool(targets: LineTargets, line: str, name: str, tmp_path: Path) -> None:
    kafka_tools_reference.check(targets.get(line), line, name, tmp_path)
