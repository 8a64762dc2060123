"""The real `odradek broker` command run to its exit, for tests of start-up refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.broker_process import REPO


def run_broker(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """`odradek broker` with these arguments, to its exit."""
    command = [sys.executable, "-m", "odradek.cli.main", "broker", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)


def minimal_settings(log_dir: Path) -> list[str]:
    """Only a loopback listener on a free port and the log directory."""
    return ["--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={log_dir}"]


def assert_refused_in_one_line(result: subprocess.CompletedProcess[str], *named: str) -> str:
    """The broker exited non-zero with one line on stderr naming each of `named`, and no traceback."""
    assert result.returncode != 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for text in named:
        assert text in lines[0], lines[0]
    return lines[0]
