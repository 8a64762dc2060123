"""A throwaway odradek broker for a pipeline run given no --bootstrap-server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from odradek.tasks.child_processes import die_with_parent, stop_child


@contextmanager
def local_broker(partitions: int = 3) -> Iterator[str]:
    """A throwaway odradek broker on a free loopback port; yields its bootstrap address. It runs in a
    session of its own, so Ctrl-C on the terminal reaches the pipeline and not the broker, which must
    outlive the stopping queries; it gets SIGTERM if the pipeline dies."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="odradek-pipeline-") as data:
        overrides = {
            "node.id": "1",
            "listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(Path(data) / "logs"),
            "num.partitions": str(partitions),
            # The exactly-once sink's two-phase commit (KIP-939), off by default as in Kafka.
            "transaction.two.phase.commit.enable": "true",
        }
        command = [sys.executable, "-m", "odradek.cli.main", "broker", "--log-level", "WARNING"]
        for key, value in overrides.items():
            command += ["--override", f"{key}={value}"]
        src = str(Path(__file__).resolve().parents[2])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
        }
        with open(Path(data) / "broker.log", "wb") as log:
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGTERM),
            )
        try:
            _wait_listening(process, port, Path(data) / "broker.log")
            yield f"127.0.0.1:{port}"
        finally:
            stop_child(process, 20)


def _wait_listening(process: subprocess.Popen[bytes], port: int, log: Path, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"broker exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"broker did not listen on {port} within {timeout_s} s")
