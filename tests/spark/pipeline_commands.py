"""Running `odradek pipeline` as a user does, and reading what it wrote."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.spark_jvm import pipeline_environment

SUMMARY = re.compile(r"^(done|stopped \(SIGINT\)): produced (\d+) page views; (\d+) aggregate rows", re.M)


def pipeline_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "odradek.cli.main", "pipeline", *arguments]


def parquet_rows(output_dir: Path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(output_dir).to_pylist()  # skips _checkpoints
    return rows


def run_pipeline_command(
    cwd: Path, *arguments: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`odradek pipeline ARGUMENTS` run to its end in `cwd`, its output captured."""
    return subprocess.run(
        pipeline_command(*arguments),
        cwd=cwd,
        env=pipeline_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def descendants(pid: int) -> dict[int, tuple[str, str]]:
    """Every process below `pid`: its start time (to tell a reused pid) and command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found: dict[int, tuple[str, str]] = {}
    pending = list(children.get(pid, []))
    while pending:
        child = pending.pop()
        try:
            command = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        found[child] = (start_time(child) or "", command)
        pending += children.get(child, [])
    return found


def left_running(processes: dict[int, tuple[str, str]], within_s: float) -> dict[int, str]:
    """Which of `processes` still run `within_s` after their parent ended: as soon as none is left, rather
    than after a fixed pause."""
    deadline = time.monotonic() + within_s
    while True:
        left = {pid: command for pid, (started, command) in processes.items() if start_time(pid) == started}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def start_time(pid: int) -> str | None:
    """When a live process started; None once it is gone or a zombie (exited, its parent not yet
    reaping it: nothing runs, and PID 1 here may never reap an orphan)."""
    try:
        fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if len(fields) < 20 or fields[0] == "Z" else fields[19]
