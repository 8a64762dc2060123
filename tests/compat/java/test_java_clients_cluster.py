"""Apache Kafka's Java clients (the newest kafka-clients 4.x and 3.9.x) against the 3-broker ZooKeeper
cluster (tests/support/txn_cluster.py: topics at RF=3, internal topics at RF=3 with min.insync.replicas
2): every JUnit test of tests/compat/java, one pytest test each (tests/support/java_suite.py). The tests
that kill brokers do it through tests/support/broker_control.py, and start them again before they end."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping

import pytest

from tests.support import java_suite
from tests.support.broker_control import BrokerControl, serving
from tests.support.interop import wait_until
from tests.support.java_security import JavaSecurity
from tests.support.txn_cluster import BROKER_IDS, Cluster, host
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture
pytestmark = pytest.mark.timeout(1500)
TARGET = "cluster"


@pytest.fixture(scope="module")
def reports(
    request: pytest.FixtureRequest,
    zookeeper_server: ZooKeeperServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Mapping[str, java_suite.Report]]:
    lines, only = java_suite.selected_tests(request)  # pytest -k runs only what it picked
    work = tmp_path_factory.mktemp("java-cluster")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    security = JavaSecurity(work / "security", {node: host(node) for node in BROKER_IDS})
    # share groups (KIP-932, ShareConsumerTest) are served by default, as by Kafka 4.4
    cluster = Cluster(work, connect, replication=3, min_isr=2, node_settings=security.broker_settings)
    try:
        for broker in cluster.brokers.values():
            broker.start()
        wait_until(lambda: _every_broker_known(cluster), 60, "three brokers in every broker's Metadata", 0.2)
        control = BrokerControl(BROKER_IDS, lambda node: cluster.brokers[node].kill(), _restarter(cluster))
        with serving(control) as url:
            target = java_suite.Target(
                TARGET, cluster.bootstrap(), len(BROKER_IDS), security=security, control=url
            )
            yield java_suite.run_lines(target, work, lines, only=only)
    finally:
        for broker in cluster.brokers.values():
            broker.stop()


def _restarter(cluster: Cluster) -> Callable[[int], None]:
    def restart(node: int) -> None:
        cluster.brokers[node].start(timeout=60)

    return restart


def _every_broker_known(cluster: Cluster) -> bool:
    try:
        return all(len(cluster.metadata(node, []).brokers) == len(BROKER_IDS) for node in BROKER_IDS)
    except Exception:
        return False


@pytest.mark.parametrize(("line", "test"), java_suite.pytest_params(TARGET))
def test_java_client(reports: Mapping[str, java_suite.Report], line: str, test: java_suite.JavaTest) -> None:
    reports[line].check(test)


@pytest.mark.parametrize("line", java_suite.LINES)
def test_junit_ran_no_test_pytest_does_not_know(reports: Mapping[str, java_suite.Report], line: str) -> None:
    assert reports[line].undeclared(java_suite.declared_tests(line)) == []
