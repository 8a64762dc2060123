"""Kafka Streams (4.x) on the 3-broker ZooKeeper cluster: a windowed count behind a repartition, with
exactly_once_v2, through a broker SIGKILL and an instance SIGKILL (tests/support/streams_scenario.py).
The committed output must hold each (value, window)'s counts 1..n once each, n from the input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import streams_scenario
from tests.support.txn_cluster import Cluster, running_cluster
from tests.support.zookeeper import ZooKeeperServer, zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture


class CrashableCluster:
    """odradek's cluster as `streams_scenario.Brokers`."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap()

    def kill(self, node: int) -> None:
        self.cluster.brokers[node].kill()

    def restart(self, node: int) -> None:
        self.cluster.brokers[node].start()


@pytest.fixture
def cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    with running_cluster(zookeeper_server.connect_string, tmp_path) as cluster:
        yield cluster


@pytest.mark.timeout(900)
def test_windowed_count_is_exactly_once_through_a_broker_kill_and_an_instance_kill(
    cluster: Cluster, tmp_path: Path
) -> None:
    streams_scenario.run(CrashableCluster(cluster), tmp_path / "streams")


def test_the_check_finds_an_update_counted_twice() -> None:
    expected = {("page-1", 0): 3}
    assert streams_scenario.exactly_once_problems(expected, {("page-1", 0): [1, 2, 3]}) == []
    (problem,) = streams_scenario.exactly_once_problems(expected, {("page-1", 0): [1, 2, 2, 3]})
    assert "repeated [2]" in problem


def test_the_check_finds_a_lost_update_and_a_wrong_final_count() -> None:
    expected = {("page-1", 0): 3, ("page-2", 10_000): 1}
    problems = streams_scenario.exactly_once_problems(expected, {("page-1", 0): [1, 3]})
    assert [p.split(":")[0] for p in problems] == ["page-1@0", "page-2@10000"]
    assert "missing [2]" in problems[0]
    assert "missing [1]" in problems[1]
