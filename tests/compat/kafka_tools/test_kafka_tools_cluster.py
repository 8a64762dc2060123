"""Apache Kafka's command-line tools (the lines of kafka_tools_reference.TESTED_LINES: 4.x) against
odradek's 3-broker ZooKeeper cluster (tests/support/txn_cluster.py): each scenario of
tests/support/tool_scenarios prints what it prints against Apache Kafka 3.9's three brokers
(golden/<line>/cluster). The scenarios that stop brokers are in test_kafka_tools_cluster_failures.py,
on a cluster of their own. Each tool line gets a cluster of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import kafka_tools_reference
from tests.support.kafka_tools_reference import LineTargets
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
pytestmark = pytest.mark.timeout(1200)  # the first test resolves the tools from Maven Central
KIND = "cluster"


@pytest.fixture(scope="module")
def targets(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LineTargets]:
    with kafka_tools_reference.odradek_cluster_lines(
        zookeeper_server, tmp_path_factory, "kafka-tools-cluster"
    ) as lines:
        yield lines


@pytest.mark.parametrize(("line", "name"), kafka_tools_reference.pytest_params(KIND))
def test_kafka_tool(targets: LineTargets, line: str, name: str, tmp_path: Path) -> None:
    kafka_tools_reference.check(targets.get(line), line, name, tmp_path)
