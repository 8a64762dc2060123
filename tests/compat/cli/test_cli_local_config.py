"""The shipped config/server.properties is for a person trying odradek on one machine: a consumer that
joins a group gets its messages within a short --timeout-ms, as with Kafka's own example config."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.cli.cli_support import cli_environment, odradek
from tests.support.broker_process import REPO, free_port


@pytest.fixture
def local_broker(tmp_path: Path) -> Iterator[str]:
    """A broker on config/server.properties; only its address and data directory overridden."""
    port = free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(tmp_path / "data"),
    }
    command = [sys.executable, "-m", "odradek.cli.main", "broker", "--config", "config/server.properties"]
    for key, value in overrides.items():
        command += ["--override", f"{key}={value}"]
    with open(tmp_path / "broker.log", "wb") as log:
        broker = subprocess.Popen(command, cwd=REPO, env=cli_environment(), stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert broker.poll() is None, (tmp_path / "broker.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the broker did not listen"
                time.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        broker.terminate()
        broker.wait(20)


def test_consume_with_a_group_prints_within_a_short_timeout_on_the_shipped_config(local_broker: str) -> None:
    produced = odradek("produce", "--topic", "quick-group", bootstrap=local_broker, stdin="a\nb\nc\n")
    assert produced.code == 0, produced.stderr
    # The group's first join: with Kafka's default 3 s initial rebalance delay it outlasts the timeout.
    consumed = odradek(
        *("consume", "--topic", "quick-group", "--group", "G", "--from-beginning", "--timeout-ms", "3000"),
        bootstrap=local_broker,
    )
    assert consumed.code == 0, consumed.stderr
    assert consumed.lines() == ["a", "b", "c"]
