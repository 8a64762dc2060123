"""Every process the broker or a command starts (the console, the regex workers, the pipeline's broker,
`cluster up`'s JVMs and brokers) dies with its parent, even when the parent is SIGKILLed, and also
when the parent dies between the fork and the kernel's taking note of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from odradek.tasks.child_processes import die_with, die_with_parent, stop_child
from tests.support.interop import wait_until

PARENT = """
import signal, subprocess, sys, time
from odradek.tasks.child_processes import die_with_parent
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                         preexec_fn=die_with_parent(signal.SIGTERM))
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return status != "Z"


def test_a_child_gets_its_signal_when_its_parent_is_sigkilled() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_until(lambda: not _alive(child), 10, "the child to die with its parent", 0.05)
    finally:
        parent.kill()
        parent.wait()
        if child and _alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_child_whose_parent_died_before_the_death_signal_was_set_exits_at_once() -> None:
    # The parent recorded is not the process that forked: as if it had died before prctl, leaving the
    # child to a reaper, which would never send the signal.
    not_the_parent = os.getpid() + 1_000_000
    child = subprocess.Popen(["sleep", "60"], preexec_fn=die_with(not_the_parent, signal.SIGKILL))
    try:
        assert child.wait(10) == 1
    finally:
        child.kill()
        child.wait()


def test_a_child_of_a_living_parent_runs() -> None:
    child = subprocess.Popen(["sleep", "60"], preexec_fn=die_with_parent(signal.SIGKILL))
    try:
        assert child.poll() is None
    finally:
        stop_child(child, timeout=5)
    assert child.returncode == -signal.SIGTERM


def test_stop_child_kills_one_that_ignores_sigterm_after_the_timeout(tmp_path: Path) -> None:
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); "
        "time.sleep(120)"
    )
    child = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "1\n"
    stop_child(child, timeout=0.5)
    assert child.returncode == -signal.SIGKILL
