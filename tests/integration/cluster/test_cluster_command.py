"""`odradek cluster up` starts ZooKeeper and brokers that form one cluster, each with the settings of
`--override`; `status` reports it; Ctrl-C stops them all."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.support.broker_process import REPO, free_port
from tests.support.requirements import require_module
from tests.support.zookeeper import zookeeper_command


def test_cluster_up_status_and_ctrl_c(tmp_path: Path) -> None:
    require_module("confluent_kafka")
    if zookeeper_command() is None:
        pytest.skip("Java or Debian's zookeeper jars are missing")
    port, zookeeper_port = free_port(), free_port()
    odradek = [sys.executable, "-m", "odradek.cli.main"]
    ports = ["--port", str(port), "--zookeeper-port", str(zookeeper_port)]
    settings = ["--override", "num.partitions=2"]
    up = subprocess.Popen(
        [*odradek, "cluster", "up", "--brokers", "3", "--dir", str(tmp_path), *ports, *settings],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=REPO,
    )
    try:
        assert up.stdout is not None
        lines = [up.stdout.readline().decode() for _ in range(6)]
        assert lines[1:4] == [
            f"broker {n}: 127.0.0.{n + 1}:{port}  odradek, log {tmp_path}/broker-{n}/broker.log\n"
            for n in (1, 2, 3)
        ], lines
        bootstrap = f"127.0.0.3:{port}"
        deadline = time.monotonic() + 20
        while True:  # until the controller has told every broker about the others
            status = subprocess.run(
                [*odradek, "cluster", "status", "--bootstrap-server", bootstrap],
                capture_output=True,
                text=True,
                cwd=REPO,
                timeout=30,
            )
            if "brokers (3):" in status.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert status.returncode == 0, status.stdout + status.stderr
        assert "brokers (3):" in status.stdout
        assert "controller: " in status.stdout and "controller: -1" not in status.stdout
        assert "partitions without a leader: 0" in status.stdout
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for node in ("1", "2", "3"):
            (described,) = admin.describe_configs([ConfigResource("broker", node)]).values()
            assert described.result(30)["num.partitions"].value == "2"
    finally:
        up.send_signal(signal.SIGINT)
        assert up.wait(90) == 0
    for node in (1, 2, 3):
        assert "broker stopped" in (tmp_path / f"broker-{node}" / "broker.log").read_text()
