"""Who follows leadership registers with the replica manager (Kafka's coordinators are told of
elections and resignations by ReplicaManager's callbacks): every listener registered hears, in the
order registered, of the partitions this broker began to lead and those it stopped leading."""

from __future__ import annotations

from pathlib import Path

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.replica_manager import ReplicaManager
from odradek.storage.log_manager import LogManager

NODE = 1


def test_every_registered_leadership_listener_hears_in_order(tmp_path: Path) -> None:
    logs = LogManager([tmp_path])
    logs.startup()
    try:
        logs.get_or_create_log("t", 0)
        replicas = ReplicaManager(NODE, ClusterMetadata("c", NODE, []), logs)
        heard: list[tuple[str, list[tuple[str, int]], list[tuple[str, int]]]] = []
        replicas.add_leadership_listener(lambda led, stopped: heard.append(("first", led, stopped)))
        replicas.add_leadership_listener(lambda led, stopped: heard.append(("second", led, stopped)))
        replicas.lead_alone("t", None, [0])
        replicas.delete_partitions("t", [0])
        assert heard == [
            ("first", [("t", 0)], []),
            ("second", [("t", 0)], []),
            ("first", [], [("t", 0)]),
            ("second", [], [("t", 0)]),
        ]
    finally:
        logs.shutdown()
