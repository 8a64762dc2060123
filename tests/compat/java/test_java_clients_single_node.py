"""Apache Kafka's Java clients (the newest kafka-clients 4.x and 3.9.x) against a single node: every
JUnit test of tests/compat/java, one pytest test each (tests/support/java_suite.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from tests.support import java_suite
from tests.support.broker_process import BrokerProcess
from tests.support.java_security import JavaSecurity
from tests.support.ports import free_port

pytestmark = pytest.mark.timeout(1200)
TARGET = "single-node"


@pytest.fixture(scope="module")
def reports(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Mapping[str, java_suite.Report]]:
    lines, only = java_suite.selected_tests(request)  # pytest -k runs only what it picked
    work = tmp_path_factory.mktemp("java-single-node")
    security = JavaSecurity(work / "security", {1: "127.0.0.1"})
    port, metrics_port = free_port(), free_port()
    settings = java_suite.SINGLE_NODE_SETTINGS | security.broker_settings(1, port)  # share groups: by default
    settings["metrics.port"] = str(metrics_port)  # ClientTelemetryTest reads what clients pushed there
    broker = BrokerProcess(work / "data", settings, port=port).start()
    try:
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        target = java_suite.Target(TARGET, broker.bootstrap, 1, security=security, metrics=metrics)
        yield java_suite.run_lines(target, work, lines, only=only)
    finally:
        broker.stop()


@pytest.mark.parametrize(("line", "test"), java_suite.pytest_params(TARGET))
def test_java_client(reports: Mapping[str, java_suite.Report], line: str, test: java_suite.JavaTest) -> None:
    reports[line].check(test)


@pytest.mark.parametrize("line", java_suite.LINES)
def test_junit_ran_no_test_pytest_does_not_know(reports: Mapping[str, java_suite.Report], line: str) -> None:
    assert reports[line].undeclared(java_suite.declared_tests(line)) == []
