"""console.port: the broker runs the web console beside itself, on its own listener, and stops it."""

from __future__ import annotations

import base64
import os
import signal
from pathlib import Path

import pytest

from odradek.server import console_process
from odradek.server.console_process import ConsoleUnavailableError, check_console_installed
from tests.console.support import http_status, wait_for
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.requirements import require_module
from tests.support.security import JAAS


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


def test_brokers_console_asks_for_users_and_reaches_a_sasl_listener_with_no_secret_in_its_argv(
    tmp_path: Path,
) -> None:
    """The console a broker starts had no authentication of its own and no client settings (it could not
    reach a SASL listener); its secrets come from files, never from its command line, which every user
    of the machine can read."""
    require_module("uvicorn")
    users = tmp_path / "console-users.txt"
    users.write_text("ops:console-secret\n")
    client = tmp_path / "console-client.properties"
    client.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\n"
        "sasl.password=admin-secret\n"
    )
    sasl, plain, port = free_port(), free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "data",
        {
            "listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl},PLAINTEXT://127.0.0.1:{plain}",
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl},PLAINTEXT://127.0.0.1:{plain}",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": JAAS,
            "offsets.topic.num.partitions": "1",
            "console.port": str(port),
            "console.basic.auth.file": str(users),
            "console.command.config": str(client),
            "console.allowed.hosts": "console.example",
        },
        port=plain,
    ).start()
    assert broker.process is not None
    try:
        url = f"http://127.0.0.1:{port}/"
        status, _ = wait_for(lambda: http_status(url), timeout=30, what="console")
        assert status == 401
        login = {"Authorization": "Basic " + base64.b64encode(b"ops:console-secret").decode()}
        status, page = http_status(url, headers=login)
        assert status == 200
        assert _cluster_id(tmp_path / "data") in page  # it logged in to the SASL listener
        assert http_status(url, headers={**login, "Host": f"console.example:{port}"})[0] == 200
        assert http_status(url, headers={**login, "Host": f"evil.example:{port}"})[0] == 421
        (console,) = _children(broker.process.pid)
        argv = Path(f"/proc/{console}/cmdline").read_bytes().split(b"\0")
        assert not [argument for argument in argv if b"secret" in argument], argv
        assert str(client).encode() in argv and str(users).encode() in argv
    finally:
        broker.stop()


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


def test_a_broker_with_a_metrics_endpoint_gives_it_to_its_console_for_the_clients_page(
    tmp_path: Path,
) -> None:
    require_module("uvicorn")
    port, metrics_port = free_port(), free_port()
    settings = {
        "console.port": str(port),
        "metrics.port": str(metrics_port),
        "offsets.topic.num.partitions": "1",
    }
    broker = BrokerProcess(tmp_path / "data", settings).start()
    try:
        status, page = wait_for(
            lambda: http_status(f"http://127.0.0.1:{port}/clients"), timeout=30, what="console"
        )
        assert status == 200
        assert "--metrics-url" not in page  # it was given one: the broker's
        assert "No client has pushed metrics" in page
    finally:
        broker.stop()
