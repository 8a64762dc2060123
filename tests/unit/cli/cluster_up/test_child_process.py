"""The processes `cluster up` starts die with it: a JVM or broker left running after the command was
SIGKILLed would hold its ports and log directory until someone found it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.interop import wait_until

PARENT = """
import sys
from pathlib import Path
from odradek.cli.cluster_up.child_process import start_child
child = start_child([sys.executable, "-c", "import time; time.sleep(120)"], Path(sys.argv[1]))
print(child.pid, flush=True)
import time
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return status != "Z"


def test_a_child_is_killed_when_the_command_that_started_it_is_sigkilled(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path / "child.log")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        assert (
            os.getpgid(child) == child
        )  # a session of its own: Ctrl-C in a terminal reaches only the command
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_until(lambda: not _alive(child), 10, "the child to die with its parent", 0.05)
    finally:
        parent.kill()
        parent.wait()
        if _alive(child):
            os.kill(child, signal.SIGKILL)
