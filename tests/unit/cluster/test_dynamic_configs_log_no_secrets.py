"""The dynamic broker configs a ZooKeeper cluster member adopts are logged without their secrets and
within a bound: a layer may hold passwords (listener.name.<l>.ssl.keystore.password) and a config znode
about 1 MB. Issue #25, "What the authorizer should hide"."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.config.broker import BrokerConfig

SECRET = "s3cret-keystore-password"
#: No warning about a config needs more than this, whatever the znode holds.
LINE_BOUND = 2_000


def _adopting(tmp_path: Path) -> DynamicBrokerConfigs:
    static = BrokerConfig(
        {"node.id": "1", "log.dirs": str(tmp_path), "listeners": "SSL://127.0.0.1:9093"}, warn_unknown=False
    )
    return DynamicBrokerConfigs(1, static)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_layers_that_contradict_each_other_are_logged_without_a_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: "ignoring dynamic broker configs {...} / {...}" printed both layers whole, the keystore
    password included."""
    dynamic = _adopting(tmp_path)
    # 200 cleaner threads leave the default dedupe buffer under 1 MiB each: the layers are refused
    dynamic.adopt(
        {"log.cleaner.threads": "200"},
        {"listener.name.ssl.ssl.keystore.password": SECRET, "log.retention.ms": "3600000"},
    )
    assert (dynamic.cluster_default, dynamic.per_broker) == ({}, {})  # the configuration stays as it was
    [line] = _warnings(caplog)
    assert SECRET not in line
    # names, and the values of what is not secret, are still there to act on
    assert "listener.name.ssl.ssl.keystore.password=[hidden]" in line
    assert "log.cleaner.threads=200" in line
    assert "log.retention.ms=3600000" in line
    assert "1MiB per cleaner thread" in line


def test_layers_that_contradict_each_other_are_logged_within_a_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dynamic = _adopting(tmp_path)
    many = {f"listener.name.l{i}.max.connections": "10" for i in range(500)}
    # a valid value of about 1 MB
    many["max.connections.per.ip.overrides"] = ",".join(f"h{i}:1" for i in range(150_000))
    dynamic.adopt({"log.cleaner.threads": "200"}, many)
    [line] = _warnings(caplog)
    assert len(line) < LINE_BOUND


def test_a_refused_stored_config_is_logged_within_a_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: the reason quoted the whole value (Kafka's "Invalid value <value> for configuration"),
    and the name whole: a megabyte of either went into one line."""
    dynamic = _adopting(tmp_path)
    huge = "9x" * 500_000
    dynamic.adopt({}, {"log.retention.ms": huge, "n" * 1_000_000: "1"})
    lines = _warnings(caplog)
    assert len(lines) == 2
    assert all(len(line) < LINE_BOUND for line in lines), [len(line) for line in lines]
    assert any("log.retention.ms" in line and "Not a number" in line for line in lines)
