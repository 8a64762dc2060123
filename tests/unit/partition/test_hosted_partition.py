"""A hosted partition's own changes: the log it serves, replaced after a log-dir move."""

from __future__ import annotations

from pathlib import Path

from odradek.partition.hosted_partition import HostedPartition
from odradek.storage.config import LogConfig
from odradek.storage.log import Log


def test_a_hosted_partition_serves_the_log_moved_in_from_another_log_dir(tmp_path: Path) -> None:
    """Kafka's Partition swaps its future log in itself; the replica manager no longer sets the log
    of a hosted partition from outside (the census's post-construction wiring)."""
    config = LogConfig.from_mapping({})
    old = Log.open(tmp_path / "a" / "t-0", config)
    new = Log.open(tmp_path / "b" / "t-0", config)
    hosted = HostedPartition("t", 0, None, 1, 3, 0, [1], [1], old)
    try:
        hosted.replace_log(new)
        assert hosted.log is new
    finally:
        old.close()
        new.close()
