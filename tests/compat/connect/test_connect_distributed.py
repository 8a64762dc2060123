"""Kafka Connect (4.1.2) in distributed mode on the 3-broker ZooKeeper cluster and on a single node:
FileStreamSource → topic → FileStreamSink, two workers; the one running the source task SIGKILLed
mid-run and started again, then the one running the sink task (tests/support/connect_scenario.py).
Every input line must reach the sink's file; a line may repeat only if it was in the input before the
last kill (at least once, as Connect promises for these connectors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import connect_scenario
from tests.support.broker_process import BrokerProcess
from tests.support.txn_cluster import Cluster, running_cluster
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(zookeeper_server.connect_string, tmp_path) as cluster:
        yield cluster


@pytest.mark.timeout(600)
def test_file_lines_reach_the_sink_at_least_once_through_a_worker_kill(
    cluster: Cluster, tmp_path: Path
) -> None:
    connect_scenario.run(cluster.bootstrap(), tmp_path / "connect")


@pytest.mark.timeout(600)
def test_file_lines_reach_the_sink_at_least_once_through_a_worker_kill_on_a_single_node(
    tmp_path: Path,
) -> None:
    # Connect's own topics and the lines' topic at RF=1: what a one-broker development set-up has
    broker = BrokerProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}).start()
    try:
        connect_scenario.run(broker.bootstrap, tmp_path / "connect", replication=1)
    finally:
        broker.stop()


def test_the_check_finds_a_lost_line_and_a_torn_one() -> None:
    lines = [connect_scenario.line(n) for n in range(4)]
    assert connect_scenario.delivery_problems(lines, lines, kill_mark=2) == []
    problems = connect_scenario.delivery_problems(lines, [*lines[:3], "line-00"], kill_mark=2)
    assert [p.split(":")[0] for p in problems] == [
        "1 lines lost",
        "1 lines never written to the input (torn or foreign)",
    ]


def test_the_check_allows_repeats_only_of_lines_from_before_the_kill() -> None:
    lines = [connect_scenario.line(n) for n in range(4)]
    assert connect_scenario.delivery_problems(lines, [*lines[:2], lines[1], *lines[2:]], kill_mark=2) == []
    (problem,) = connect_scenario.delivery_problems(lines, [*lines, lines[2]], kill_mark=2)
    assert problem.startswith("1 lines appended after the kill occur more than once")
