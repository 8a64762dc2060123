"""console.port: the broker runs the web console beside itself, on its own listener, and stops it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from odradek.server import console_process
from odradek.server.console_process import ConsoleUnavailableError, check_console_installed
from tests.console.support import http_status, wait_for
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.requirements import require_module


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _cluster_id(data_dir: Path) -> str:
    lines = (data_dir / "meta.properties").read_text().splitlines()
    return next(line.split("=", 1)[1] for line in lines if line.startswith("cluster.id="))


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_broker_with_console_port_serves_the_console_and_takes_it_down_with_it(
    tmp_path: Path, stop: str
) -> None:
    require_module("uvicorn")
    port = free_port()
    broker = BrokerProcess(
        tmp_path / "data", {"console.port": str(port), "offsets.topic.num.partitions": "1"}
    )
    broker.start()
    assert broker.process is not None
    try:
        status, page = wait_for(lambda: http_status(f"http://127.0.0.1:{port}/"), timeout=30, what="console")
        assert status == 200
        assert _cluster_id(tmp_path / "data") in page  # the console talks to this very broker
        (console,) = _children(broker.process.pid)
    finally:
        if stop == "sigterm":
            assert broker.stop() == 0
        else:
            broker.process.send_signal(signal.SIGKILL)
            broker.process.wait()
    wait_for(lambda: not _alive(console) or Path(f"/proc/{console}/stat").read_text().split()[2] == "Z")
    with pytest.raises(OSError):
        http_status(f"http://127.0.0.1:{port}/")


def test_broker_without_console_port_runs_no_console(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"offsets.topic.num.partitions": "1"}).start()
    try:
        assert broker.process is not None
        assert _children(broker.process.pid) == []
    finally:
        broker.stop()


def test_console_port_without_the_console_installed_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = console_process.importlib.util.find_spec
    monkeypatch.setattr(
        console_process.importlib.util,
        "find_spec",
        lambda name, *args: None if name == "uvicorn" else real(name, *args),
    )
    with pytest.raises(
        ConsoleUnavailableError, match=r"console.port is set .*missing uvicorn.*odradek\[console\]"
    ):
        check_console_installed()
