"""A broker that cannot start says why in one line on stderr and exits non-zero, without a traceback.

Each case runs the real `odradek broker` command. Before, a port in use, an unknown log level, an
unusable log directory or an unresolvable listener host ended in a Python traceback (after the logs
were loaded), and a second broker on a data directory in use started and shared it.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.broker_process import REPO, BrokerProcess, free_port

pytestmark = pytest.mark.timeout(60)

_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE = 1
_CAP_DAC_READ_SEARCH = 2


def run_broker(*args: str, preexec_fn: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    """`odradek broker` with these arguments, to its exit."""
    command = [sys.executable, "-m", "odradek.cli.main", "broker", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=30, preexec_fn=preexec_fn
    )


def minimal(log_dir: Path, port: int = 0, host: str = "127.0.0.1") -> list[str]:
    return ["--override", f"listeners=PLAINTEXT://{host}:{port}", "--override", f"log.dirs={log_dir}"]


def config_file(path: Path, settings: dict[str, str]) -> list[str]:
    """`--config` with these settings in a properties file: secrets given with --override draw a warning
    line of their own (they show in ps), which is not what these tests look at."""
    path.write_text("".join(f"{name}={value}\n" for name, value in settings.items()), encoding="utf-8")
    return ["--config", str(path)]


def assert_refused_in_one_line(result: subprocess.CompletedProcess[str], *named: str) -> str:
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for text in named:
        assert text in lines[0], lines[0]
    return lines[0]


def test_port_in_use_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_broker(*minimal(tmp_path / "data", port))
    line = assert_refused_in_one_line(result, f"127.0.0.1:{port}", "PLAINTEXT", "Address already in use")
    assert line.startswith("odradek broker: ")
    # It stopped cleanly: the logs it had loaded were closed and its lock released.
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()


def test_metrics_port_in_use_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_broker(*minimal(tmp_path / "data"), "--override", f"metrics.port={port}")
    assert_refused_in_one_line(result, f"127.0.0.1:{port}", "metrics.port", "Address already in use")


def test_a_console_beyond_loopback_without_users_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    console = ("--override", f"console.port={free_port()}", "--override", "console.host=0.0.0.0")
    result = run_broker(*minimal(tmp_path / "data"), *console)
    assert_refused_in_one_line(result, "console.host 0.0.0.0", "set console.basic.auth.file")


def test_console_files_that_cannot_be_read_refuse_to_start_in_one_line(tmp_path: Path) -> None:
    port = ("--override", f"console.port={free_port()}")
    missing = tmp_path / "missing.txt"
    result = run_broker(
        *minimal(tmp_path / "data"), *port, "--override", f"console.basic.auth.file={missing}"
    )
    assert_refused_in_one_line(result, f"cannot read console.basic.auth.file {missing}")
    result = run_broker(*minimal(tmp_path / "data"), *port, "--override", f"console.command.config={missing}")
    assert_refused_in_one_line(result, f"console.command.config: cannot read {missing}")


def test_unknown_log_level_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    result = run_broker("--log-level", "LOUD", *minimal(tmp_path / "data"))
    assert_refused_in_one_line(result, "LOUD", "log-level")
    assert not (tmp_path / "data").exists()


def test_log_dir_under_a_file_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "plain-file").write_text("not a directory")
    result = run_broker(*minimal(tmp_path / "plain-file" / "data"))
    assert_refused_in_one_line(result, str(tmp_path / "plain-file" / "data"), "Not a directory")


def test_log_dir_that_is_a_file_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    result = run_broker(*minimal(tmp_path / "data"))
    assert_refused_in_one_line(result, str(tmp_path / "data"), "not a directory")


def test_unwritable_log_dir_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o555)
    try:
        if _writable_to_child(data):
            pytest.skip("cannot make a directory read-only to a child process here")
        result = run_broker(*minimal(data), preexec_fn=_without_root_file_permission_override)
    finally:
        data.chmod(0o755)
    assert_refused_in_one_line(result, str(data), "not readable and writable")
    assert list(data.iterdir()) == []


def test_unresolvable_listener_host_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    result = run_broker(*minimal(tmp_path / "data", host="no-such-host.invalid"))
    assert_refused_in_one_line(result, "no-such-host.invalid", "PLAINTEXT")


def test_missing_config_file_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    result = run_broker("--config", str(tmp_path / "server.properties"))
    assert_refused_in_one_line(result, str(tmp_path / "server.properties"), "No such file")


def test_bad_value_in_config_file_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:0\nlog.dirs={tmp_path / 'data'}\nnum.partitions=many\n"
    )
    result = run_broker("--config", str(config))
    assert_refused_in_one_line(result, "num.partitions", "many")


def test_config_file_without_listeners_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "server.properties"
    config.write_text(f"listeners=\nlog.dirs={tmp_path / 'data'}\n")
    result = run_broker("--config", str(config))
    assert_refused_in_one_line(result, "listeners")


def test_second_broker_on_same_log_dir_refuses_to_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = BrokerProcess(data, {"offsets.topic.num.partitions": "1"}).start()
    try:
        before = _snapshot(data)
        result = run_broker(*minimal(data, free_port()), "--override", "node.id=1")
        assert_refused_in_one_line(result, "Failed to acquire lock on file .lock", str(data))
        # The second broker touched nothing: no clean-shutdown marker for the running broker's logs.
        assert _snapshot(data) == before
        assert not (data / ".kafka_cleanshutdown").exists()
    finally:
        assert first.stop() == 0
    assert (data / ".kafka_cleanshutdown").exists()


def test_configured_node_id_other_than_meta_properties_refuses_to_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    BrokerProcess(data, {"offsets.topic.num.partitions": "1"}).start().stop()
    result = run_broker(*minimal(data), "--override", "node.id=2")
    assert_refused_in_one_line(result, "node.id 2", "stored node id 1", str(data))


def test_corrupt_meta_properties_refuses_to_start_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_text("version=0\nbroker.id=one\n")
    result = run_broker(*minimal(data))
    assert_refused_in_one_line(result, str(data / "meta.properties"), "malformed")


def test_corrupt_producer_id_block_refuses_to_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    BrokerProcess(data, {"offsets.topic.num.partitions": "1"}).start().stop()
    (data / "producer-id-block").write_text("12\x0000\n")
    result = run_broker(*minimal(data), "--override", "node.id=1")
    assert_refused_in_one_line(result, str(data / "producer-id-block"), "corrupt")


def _snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    """Every file under `directory` with its size and modification time."""
    return {
        str(path.relative_to(directory)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def _writable_to_child(directory: Path) -> bool:
    probe = [
        sys.executable,
        "-c",
        "import os, sys; sys.exit(os.access(sys.argv[1], os.W_OK))",
        str(directory),
    ]
    return (
        subprocess.run(probe, preexec_fn=_without_root_file_permission_override, check=False).returncode == 1
    )


def _without_root_file_permission_override() -> None:
    """In the child, before exec: root loses the capabilities that ignore file modes (as tests often
    run as root in containers), so a read-only directory is read-only to the broker too."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)  # if refused, the test skips (see above)


@pytest.mark.parametrize("version", ["2.8", "0.10.2", "4.0-IV0"])
def test_an_inter_broker_protocol_version_odradek_cannot_speak_refuses_to_start_in_one_line(
    tmp_path: Path, version: str
) -> None:
    result = run_broker(*minimal(tmp_path / "data"), "--override", f"inter.broker.protocol.version={version}")
    line = assert_refused_in_one_line(
        result, f"odradek cannot honour inter.broker.protocol.version={version}"
    )
    assert line.startswith("odradek broker: ")
    assert not (tmp_path / "data").exists()  # refused before anything was written
