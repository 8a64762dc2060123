"""Kafka Connect (4.1.2) in distributed mode on the 3-broker ZooKeeper cluster: FileStreamSource → topic
→ FileStreamSink, two workers; the one running the source task SIGKILLed mid-run and started again,
then the one running the sink task (tests/support/connect_scenario.py). Every input line must reach the
sink's file; a line may repeat only if it was in the input before the last kill (at least once, as
Connect promises for these connectors)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import connect_scenario
from tests.support.interop import wait_until
from tests.support.txn_cluster import BROKER_IDS, Cluster
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    """Three brokers, internal topics at RF=3 and min.insync.replicas 2 (as the Java suite's cluster)."""
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    cluster = Cluster(tmp_path, connect, replication=3, min_isr=2)
    try:
        for broker in cluster.brokers.values():
            broker.start()
        wait_until(lambda: _every_broker_known(cluster), 60, "three brokers in every broker's Metadata", 0.2)
        yield cluster
    finally:
        for broker in cluster.brokers.values():
            broker.stop()


def _every_broker_known(cluster: Cluster) -> bool:
    try:
        return all(len(cluster.metadata(node, []).brokers) == len(BROKER_IDS) for node in BROKER_IDS)
    except Exception:
        return False


@pytest.mark.timeout(600)
def test_file_lines_reach_the_sink_at_least_once_through_a_worker_kill(
    cluster: Cluster, tmp_path: Path
) -> None:
    connect_scenario.run(cluster.bootstrap(), tmp_path / "connect")


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
