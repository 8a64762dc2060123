"""The node id a broker runs as: configured, else the one kept in meta.properties, else 1; never -1."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.storage.checkpoints import MetaProperties, write_meta_properties
from odradek.storage.node_id import DEFAULT_NODE_ID, InconsistentNodeIdError, resolve_node_id

CLUSTER_ID = "S5bu8IuPSOGSnaHANeXdhg"


def _stored(log_dir: Path, node_id: int) -> Path:
    log_dir.mkdir(parents=True, exist_ok=True)
    write_meta_properties(log_dir, MetaProperties(CLUSTER_ID, node_id))
    return log_dir


def test_no_node_id_and_no_meta_properties_runs_as_node_1(tmp_path: Path) -> None:
    assert resolve_node_id([tmp_path / "new"], -1) == DEFAULT_NODE_ID == 1


def test_no_node_id_runs_as_the_id_kept_in_meta_properties(tmp_path: Path) -> None:
    assert resolve_node_id([_stored(tmp_path / "a", 7), tmp_path / "b"], -1) == 7


def test_configured_node_id_matching_meta_properties_is_used(tmp_path: Path) -> None:
    assert resolve_node_id([_stored(tmp_path / "a", 3)], 3) == 3
    assert resolve_node_id([tmp_path / "new"], 4) == 4


def test_configured_node_id_other_than_meta_properties_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        InconsistentNodeIdError, match=r"Configured node\.id 2 does not match the stored node id 1"
    ):
        resolve_node_id([_stored(tmp_path / "a", 1)], 2)


def test_log_dirs_of_different_brokers_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InconsistentNodeIdError, match="different brokers"):
        resolve_node_id([_stored(tmp_path / "a", 1), _stored(tmp_path / "b", 2)], -1)


def test_stored_node_id_minus_1_is_refused_not_served(tmp_path: Path) -> None:
    with pytest.raises(InconsistentNodeIdError, match="invalid node id -1"):
        resolve_node_id([_stored(tmp_path / "a", -1)], -1)


def test_no_node_id_anywhere_with_generation_disabled_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        InconsistentNodeIdError, match=r"broker\.id\.generation\.enable is false: set node\.id"
    ):
        resolve_node_id([tmp_path / "new"], -1, generation_enabled=False)
    assert resolve_node_id([_stored(tmp_path / "a", 6)], -1, generation_enabled=False) == 6
    assert resolve_node_id([tmp_path / "new"], 2, generation_enabled=False) == 2


def test_a_cluster_member_with_no_id_configured_or_stored_refuses_to_start_rather_than_take_1(
    tmp_path: Path,
) -> None:
    """Kafka gives it a unique id from ZooKeeper's /brokers/seqid; taking 1 would collide with broker 1."""
    with pytest.raises(InconsistentNodeIdError, match=r"a cluster member needs broker\.id \(or node\.id\)"):
        resolve_node_id([tmp_path / "new"], -1, cluster=True)
    assert resolve_node_id([_stored(tmp_path / "a", 7)], -1, cluster=True) == 7
    assert resolve_node_id([tmp_path / "b"], 4, cluster=True) == 4


def test_a_broker_with_zookeeper_connect_and_no_id_stops_in_one_line_before_touching_zookeeper(
    tmp_path: Path,
) -> None:
    from odradek.config.broker import BrokerConfig
    from odradek.server.broker import Broker

    config = BrokerConfig(
        {
            "zookeeper.connect": "127.0.0.1:1",
            "log.dirs": str(tmp_path / "d"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
        }
    )
    with pytest.raises(InconsistentNodeIdError) as caught:
        Broker(config)
    assert "\n" not in str(caught.value) and "/brokers/seqid" in str(caught.value)
