"""The processes `cluster up` starts (ZooKeeper, odradek's brokers, Kafka's JVMs): each in a session of
its own, so that Ctrl-C in the terminal reaches only the command, which stops them in order; and each
killed by the kernel if the command dies first (Linux's PR_SET_PDEATHSIG), so no JVM or broker outlives
a `cluster up` that was SIGKILLed or crashed.

SIGKILL, not SIGTERM, on the command's death: ZooKeeper goes at the same moment, so a broker's
controlled shutdown could only wait for it; both kinds recover their logs on the next start as after
any crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def start_child(
    command: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`command` with its output appended to `log_path`, killed if this process dies."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            list(command),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),
        )


def stop_children(processes: Sequence[subprocess.Popen[bytes]], timeout: float) -> None:
    """SIGTERM to each (a broker's controlled shutdown), all at once; SIGKILL to any still running
    `timeout` seconds later."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _die_with(parent: int) -> Callable[[], None]:
    def in_child() -> None:
        with contextlib.suppress(OSError, AttributeError):  # not Linux: the session still isolates it
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the command died before prctl took effect
            os._exit(1)

    return in_child
