"""/config/changes is purged as Kafka's brokers purge it: after processing the notifications, a broker
deletes those older than the change expiration (15 minutes; shortened here), keeps younger ones, and
several brokers purging at once do not trip over each other. Before, /config/changes grew forever.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from odradek.cluster.zookeeper import configs, paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.notifications import purge_expired_notifications
from odradek.storage.log_manager import LogManager

pytestmark = pytest.mark.timeout(120)
#: Shortened from 15 minutes, but long enough that a broker slowed by a loaded machine reads a young
#: notification before another broker's purge finds it expired (as Kafka's would after 15 minutes).
EXPIRATION_MS = 5000


def _sync(zk: ZooKeeperClient, logs: LogManager, seen: list[str]) -> TopicConfigSync:
    """A broker's config follower (no topics: it follows `users` changes into `seen`)."""
    sync = TopicConfigSync(
        zk, ClusterMetadata("test-cluster", 1, []), logs, change_expiration_ms=EXPIRATION_MS
    )

    async def record(name: str) -> None:
        seen.append(name)

    sync.follow("users", record)
    return sync


async def _eventually(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def test_brokers_purge_config_change_notifications_older_than_the_expiration(
    connect_zk: Callable[[], ZooKeeperClient], tmp_path: Path
) -> None:
    writer = connect_zk()
    writer.ensure_persistent_paths()
    old = configs.change_entity_config(writer, "users", "alice", {"producer_byte_rate": "1"})
    first_seen: list[str] = []
    second_seen: list[str] = []

    def notifications() -> list[str]:
        return sorted(writer.children(paths.CONFIG_CHANGES))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for seen, logs in ((first_seen, first_logs), (second_seen, second_logs)):
            _sync(connect_zk(), logs, seen).start(loop)
        await _eventually(lambda: first_seen == ["alice"] == second_seen, "alice's change on both brokers")
        assert len(notifications()) == 1  # young: kept
        await asyncio.sleep(EXPIRATION_MS / 1000 + 0.5)
        configs.change_entity_config(writer, "users", "bob", {"producer_byte_rate": "2"})
        await _eventually(lambda: second_seen == ["alice", "bob"] == first_seen, "bob's change on both")
        # Processing bob's change purged alice's expired notification, not bob's young one.
        await _eventually(lambda: len(notifications()) == 1, "the expired notification purged")
        [left] = notifications()
        assert paths.config_change_sequence(left) > old

    first_logs, second_logs = LogManager([tmp_path / "one"]), LogManager([tmp_path / "two"])
    try:
        first_logs.startup()
        second_logs.startup()
        asyncio.run(main())
    finally:
        first_logs.shutdown()
        second_logs.shutdown()


def test_purge_keeps_young_notifications_and_tolerates_one_already_gone(
    connect_zk: Callable[[], ZooKeeperClient],
) -> None:
    zk = connect_zk()
    zk.ensure_persistent_paths()
    for name in ("alice", "bob"):
        configs.change_entity_config(zk, "users", name, {"producer_byte_rate": "1"})
    names = zk.children(paths.CONFIG_CHANGES)
    assert purge_expired_notifications(zk, paths.CONFIG_CHANGES) == []  # the 15-minute default
    time.sleep(0.2)
    gone = [*names, "config_change_9999999999"]  # one another broker purged first
    assert sorted(purge_expired_notifications(zk, paths.CONFIG_CHANGES, gone, expiration_ms=100)) == sorted(
        names
    )
    assert zk.children(paths.CONFIG_CHANGES) == []
