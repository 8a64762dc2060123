"""Apache Kafka's command-line tools (4.x and 3.9) against a single odradek broker: each scenario of
tests/support/tool_scenarios prints what it prints against Apache Kafka 3.9 (golden/<line>/single-node).
Each tool line gets a broker of its own."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import kafka_tools_reference
from tests.support.kafka_tools_reference import LineTargets
from tests.support.tool_scenarios.targets import OdradekSingleNode

pytestmark = pytest.mark.timeout(1200)  # the first test resolves the tools from Maven Central
KIND = "single-node"


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LineTargets]:
    started = LineTargets(lambda line: OdradekSingleNode(tmp_path_factory.mktemp(f"kafka-tools-{line}")))
    try:
        yield started
    finally:
        started.stop()


@pytest.mark.parametrize(("line", "name"), kafka_tools_reference.pytest_params(KIND))
def test_kafka_tool(targets: LineTargets, line: str, name: str, tmp_path: Path) -> None:
    kafka_tools_reference.check(targets.get(line), line, name, tmp_path)
