"""Partitions t-0 and t-1 led alone, each in a log dir of its own: one to fail, one to stay healthy."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.replica_manager import ReplicaManager
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager


@dataclass(frozen=True)
class TwoLogDirs:
    logs: LogManager
    replicas: ReplicaManager
    #: t-0's log, in the first dir.
    failing: Log
    #: t-1's log, in the second.
    healthy: Log


@contextmanager
def two_log_dirs(tmp_path: Path) -> Iterator[TwoLogDirs]:
    logs = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig())
    logs.startup()
    try:
        failing = logs.get_or_create_log("t", 0)
        healthy = logs.get_or_create_log("t", 1)
        assert failing.dir.parent != healthy.dir.parent
        replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), logs)
        replicas.lead_alone("t", None, [0, 1])
        yield TwoLogDirs(logs, replicas, failing, healthy)
    finally:
        logs.shutdown()
