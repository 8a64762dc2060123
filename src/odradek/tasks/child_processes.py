"""The processes odradek starts die with the process that started them: the broker's console and
regex workers, the pipeline's broker, `cluster up`'s ZooKeeper, brokers and JVMs. One left running
after its parent was SIGKILLed would hold ports, log directories and memory until someone found it.

Linux sends a chosen signal to a child when its parent dies (PR_SET_PDEATHSIG), set in the child
between fork and exec. A parent that dies before that leaves the child to a reaper and no signal ever
comes, so the child compares its parent with the one recorded before the fork and exits if they
differ. Elsewhere than Linux nothing is set and the caller's other means apply (sessions, pipes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

_PR_SET_PDEATHSIG = 1


def die_with_parent(signal_number: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` for Popen: the child gets `signal_number` when this process dies. Call it in the
    parent (it records the parent's pid then)."""
    return die_with(os.getpid(), signal_number)


def die_with(parent: int, signal_number: int) -> Callable[[], None]:
    """As `die_with_parent`, for a parent whose pid is `parent`."""

    def in_child() -> None:
        with contextlib.suppress(OSError, AttributeError):  # not Linux
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal_number)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return in_child


def stop_child(process: subprocess.Popen[bytes] | subprocess.Popen[str], timeout: float) -> None:
    """SIGTERM (a broker's controlled shutdown, a console's clean exit); SIGKILL if it still runs
    `timeout` seconds later."""
    stop_children([process], timeout)


def stop_children(
    processes: Sequence[subprocess.Popen[bytes] | subprocess.Popen[str]], timeout: float
) -> None:
    """`stop_child` for each, all signalled at once and given the same `timeout`."""
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
