"""A cluster member logs a topic's configs read from ZooKeeper (on a change, or when they cannot be
applied) within a bound: a config znode may hold about 1 MB, and a topic's configs are set by clients
(AlterConfigs). Issue #25, "What the authorizer should hide"."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.config_znodes import ConfigChangeNotification, EntityConfigZnode
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager

#: No line about a topic's configs needs more than this, whatever ZooKeeper holds.
LINE_BOUND = 6_000


class ConfigZooKeeper:
    """/config/topics/<topic> and one notification naming it."""

    def __init__(self, topic: str, configs: dict[str, str]) -> None:
        self.znodes = {
            paths.config_entity(paths.TOPIC_CONFIG, topic): EntityConfigZnode(configs).serialize(),
            f"{paths.CONFIG_CHANGES}/{paths.CONFIG_CHANGE_PREFIX}0000000001": ConfigChangeNotification(
                f"{paths.TOPIC_CONFIG}/{topic}"
            ).serialize(),
        }

    def children(self, path: str) -> list[str]:
        prefix = path + "/"
        return [p[len(prefix) :] for p in self.znodes if p.startswith(prefix)]

    def read(self, path: str) -> tuple[bytes, object] | None:
        data = self.znodes.get(path)
        # just made: nothing to purge
        return None if data is None else (data, SimpleNamespace(ctime=time.time() * 1000))


def _changed(tmp_path: Path, topic: str, configs: dict[str, str]) -> None:
    logs = LogManager([tmp_path], LogConfig())
    logs.startup()
    try:
        sync = TopicConfigSync(
            ConfigZooKeeper(topic, configs),  # type: ignore[arg-type]
            ClusterMetadata("cluster", 1, [BrokerEndpoint(1, "localhost", 9092)]),
            logs,
        )
        asyncio.run(sync._read_changes())
    finally:
        logs.shutdown()


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() + (r.exc_text or "") for r in caplog.records if r.name.startswith("odradek")]


def test_a_topic_config_change_is_logged_within_a_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: "configs of topic orders changed: {...}" quoted every config whole (here ~1 MB)."""
    caplog.set_level(logging.INFO, logger="odradek")
    throttled = ",".join(f"{p}:1" for p in range(150_000))  # a valid value, ~1 MB
    configs = {"retention.ms": "86400000", "leader.replication.throttled.replicas": throttled}
    configs.update({f"x.custom.{i}": "v" * 1000 for i in range(100)})  # names no catalog knows
    _changed(tmp_path, "orders", configs)
    [line] = [line for line in _lines(caplog) if "orders changed" in line]
    assert len(line) < LINE_BOUND, len(line)
    assert "retention.ms=86400000" in line
    assert "leader.replication.throttled.replicas=0:1,1:1," in line


def test_topic_configs_that_cannot_be_applied_are_logged_within_a_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: "cannot apply the configs of topic orders: {...}" quoted the configs whole, and the
    traceback the bad value once more."""
    caplog.set_level(logging.INFO, logger="odradek")
    _changed(tmp_path, "orders", {"retention.ms": "9x" * 500_000})
    lines = _lines(caplog)
    [failed] = [line for line in lines if "cannot apply the configs of topic orders" in line]
    assert all(len(line) < LINE_BOUND for line in lines), [len(line) for line in lines]
    assert "retention.ms" in failed


def test_a_notification_naming_a_huge_topic_is_logged_within_a_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="odradek")
    _changed(tmp_path, "t" * 1_000_000, {"retention.ms": "86400000"})
    lines = _lines(caplog)
    assert lines
    assert all(len(line) < LINE_BOUND for line in lines), [len(line) for line in lines]


def test_a_topic_config_odradek_refuses_but_another_broker_stored_is_logged_as_not_honoured(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Kafka 3.9 broker with tiered storage may store remote.storage.enable=true, which odradek's
    AlterConfigs refuses: this broker described it and went on keeping the topic's segments locally,
    without a word. Nothing can refuse a value already stored: the error says it is not honoured."""
    _changed(tmp_path, "tiered", {"remote.storage.enable": "true", "retention.ms": "60000"})
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("tiered" in line and "remote.storage.enable" in line for line in errors), errors
