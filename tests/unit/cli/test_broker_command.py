"""`odradek broker` reads KAFKA_OPTS (the JVM system properties of Kafka's start scripts) for the
ZooKeeper login alone: a single node, which never talks to ZooKeeper, leaves it alone."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import pytest

import odradek.logs
import odradek.server.broker
from odradek.cli import broker as broker_command
from odradek.config.broker import BrokerConfig

#: What a Kafka broker's environment may hold that odradek refuses in a cluster.
UNUSABLE_IN_A_CLUSTER = {
    "a ZooKeeper property odradek does not read": "-Xmx1G -Dzookeeper.ssl.keyStore.location=/etc/k.p12",
    "an unmatched quote": "-Xmx1G -Dsome.flag='unmatched",
}


def _run(
    monkeypatch: pytest.MonkeyPatch, kafka_opts: str, overrides: list[str]
) -> tuple[int, list[Mapping[str, str]]]:
    """`odradek broker --override ...` with KAFKA_OPTS set, up to the point where it would serve: its exit
    code and the system properties it would serve with."""
    served: list[Mapping[str, str]] = []

    async def serve(config: BrokerConfig, properties: Mapping[str, str] | None = None) -> None:
        served.append(dict(properties or {}))

    monkeypatch.setenv("KAFKA_OPTS", kafka_opts)
    monkeypatch.setattr(odradek.server.broker, "serve", serve)
    monkeypatch.setattr(odradek.logs, "configure_logging", lambda level: None)
    args = argparse.Namespace(config=None, override=overrides, log_level="INFO")
    return broker_command.run(args), served


@pytest.mark.parametrize("kafka_opts", UNUSABLE_IN_A_CLUSTER.values(), ids=UNUSABLE_IN_A_CLUSTER.keys())
def test_a_single_node_starts_whatever_kafka_opts_holds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kafka_opts: str
) -> None:
    """Before: the properties were read and checked on a single node too, so it exited (2) naming one."""
    code, served = _run(monkeypatch, kafka_opts, [f"log.dirs={tmp_path}"])
    assert (code, served) == (0, [{}])


@pytest.mark.parametrize("kafka_opts", UNUSABLE_IN_A_CLUSTER.values(), ids=UNUSABLE_IN_A_CLUSTER.keys())
def test_a_cluster_member_refuses_kafka_opts_it_cannot_honour_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str], kafka_opts: str
) -> None:
    code, served = _run(
        monkeypatch, kafka_opts, [f"log.dirs={tmp_path}", "zookeeper.connect=127.0.0.1:2181/kafka"]
    )
    assert (code, served) == (2, [])
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("odradek broker: KAFKA_OPTS"), line


def test_a_cluster_member_reads_its_zookeeper_login_from_kafka_opts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    code, served = _run(
        monkeypatch,
        "-Xmx1G -Djava.security.auth.login.config=/etc/kafka/jaas.conf",
        [f"log.dirs={tmp_path}", "zookeeper.connect=127.0.0.1:2181/kafka"],
    )
    assert (code, served) == (0, [{"java.security.auth.login.config": "/etc/kafka/jaas.conf"}])
