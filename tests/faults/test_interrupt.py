"""Ctrl-C or SIGTERM in the middle of a fault run leaves no ZooKeeper or broker process, and no data
directory, behind (SIGTERM's default action would skip the run's `finally`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.broker_process import REPO
from tests.support.requirements import missing, require_module
from tests.support.zookeeper import zookeeper_command


def _descendants(pid: int) -> set[int]:
    """Every process below `pid`, from /proc's parent links."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("interrupt", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_stops_every_process_it_started(interrupt: signal.Signals, tmp_path: Path) -> None:
    require_module("confluent_kafka")
    if zookeeper_command() is None:
        missing("ZooKeeper is not installed (scripts/install-system-deps.sh installs Debian's zookeeper)")
    log = tmp_path / "harness.log"
    with open(log, "wb") as output:
        run = subprocess.Popen(
            [sys.executable, "-m", "tests.faults", "--faults", "3", "--seed", "5"],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=output,
        )
    try:
        deadline = time.monotonic() + 180
        while "fault 1/3" not in log.read_text(errors="replace"):
            assert run.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the run did not get to its first fault"
            time.sleep(0.5)
        started = _descendants(run.pid)
        assert len(started) >= 4  # ZooKeeper and three brokers at least
        text = log.read_text(errors="replace")
        data = Path(text.split("brokers' data and logs in ", 1)[1].split()[0])
        assert data.is_dir()
        run.send_signal(interrupt)
        assert run.wait(120) != 0
        deadline = time.monotonic() + 60
        while left := [pid for pid in started if _alive(pid)]:
            assert time.monotonic() < deadline, f"still running after the harness ended: {left}"
            time.sleep(0.5)
        assert not data.exists()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
