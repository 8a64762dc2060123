"""A real odradek broker in a child process, on a free loopback port, for integration and compat tests."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.support.ports import free_port

REPO = Path(__file__).resolve().parents[2]


def _die_with_parent() -> None:
    """Linux: the broker gets SIGTERM if the test process dies, so an interrupted run leaks no brokers."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1


class BrokerProcess:
    """Start, stop, kill and restart a broker; its data stays in `data_dir` across restarts."""

    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, str] | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        module: str = "odradek.cli.main",
        env: dict[str, str] | None = None,
        config_file: Path | None = None,
    ) -> None:
        self.data_dir = data_dir
        #: A server.properties to start from as given (`--config`): then only `overrides` are added.
        self.config_file = config_file
        #: Environment variables set for the broker on top of the test's (e.g. KAFKA_OPTS).
        self.env = dict(env or {})
        #: The module run as `python -m` with the odradek command's arguments (a test's own launcher
        #: may wire something in first).
        self.module = module
        #: A cluster's brokers each take their own loopback address (127.0.0.2...), as separate hosts.
        self.host = host
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0, wait: bool = True) -> BrokerProcess:
        """Launch the broker and, with `wait`, return once its port accepts connections."""
        defaults = {
            "node.id": "1",
            "listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
        }
        settings = {**(defaults if self.config_file is None else {}), **self.overrides}
        command = [sys.executable, "-m", self.module, "broker"]
        if self.config_file is not None:
            command += ["--config", str(self.config_file)]
        for key, value in settings.items():
            command += ["--override", f"{key}={value}"]
        log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's lifetime
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **self.env}
        self.process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=REPO, preexec_fn=_die_with_parent
        )
        log.close()
        return self.wait_listening(timeout) if wait else self

    def wait_listening(self, timeout: float = 30.0) -> BrokerProcess:
        """Return once the broker's port accepts connections; raises if it exits first or never does."""
        assert self.process is not None, "not started"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"broker exited with {self.process.returncode}:\n{self.log_text()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"broker did not listen within {timeout}s:\n{self.log_text()}")

    def stop(self, timeout: float = 20.0) -> int | None:
        """Graceful stop (SIGTERM); returns the exit code."""
        if self.process is None:
            return None
        code = terminate(self.process, timeout)
        self.process = None
        return code

    def kill(self) -> None:
        """An unclean stop (SIGKILL), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> BrokerProcess:
        self.stop()
        return self.start()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""


def terminate(process: subprocess.Popen[bytes], timeout: float) -> int:
    """SIGTERM `process` (unless it has ended), SIGKILL it after `timeout` s; its exit code."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
