"""cluster.id in a cluster is real or refused: the first broker writes it to ZooKeeper's /cluster/id,
and a broker configured with another id refuses to start in one line naming it (it used to join the
cluster under ZooKeeper's id, the configured one silently ignored)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.support.broker_process import BrokerProcess
from tests.support.zookeeper import ZooKeeperServer

FIRST_ID = "S5bu8IuPSOGSnaHANeXdhg"
OTHER_ID = "yW8CzWV1TP2ZqeiVMP0Kww"


def test_the_first_broker_writes_its_cluster_id_and_a_broker_configured_with_another_one_refuses_to_start(
    zookeeper_connect: str, zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    settings = {"zookeeper.connect": zookeeper_connect, "zookeeper.session.timeout.ms": "6000"}
    first = BrokerProcess(
        tmp_path / "a", {**settings, "node.id": "1", "cluster.id": FIRST_ID}, host="127.0.0.2"
    )
    first.start()
    try:
        view = KazooClient(hosts=zookeeper_server.connect_string)
        view.start(10)
        try:
            chroot = zookeeper_connect[len(zookeeper_server.connect_string) :]
            data, _ = view.get(f"{chroot}/cluster/id")
            assert json.loads(data)["id"] == FIRST_ID
        finally:
            view.stop()
            view.close()
        other = BrokerProcess(
            tmp_path / "b", {**settings, "node.id": "2", "cluster.id": OTHER_ID}, host="127.0.0.3"
        )
        with pytest.raises(RuntimeError, match="exited with"):
            other.start()
        log = other.log_text()
        assert f"cluster.id {OTHER_ID} is not this cluster's id {FIRST_ID}" in log, log
        assert not (tmp_path / "b" / "meta.properties").exists()  # nothing written as the wrong cluster
    finally:
        first.stop()
