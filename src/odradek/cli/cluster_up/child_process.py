"""The processes `cluster up` starts (ZooKeeper, odradek's brokers, Kafka's JVMs): each in a session of
its own, so that Ctrl-C in the terminal reaches only the command, which stops them in order; and each
killed by the kernel if the command dies first (Linux's PR_SET_PDEATHSIG), so no JVM or broker outlives
a `cluster up` that was SIGKILLed or crashed.

SIGKILL, not SIGTERM, on the command's death: ZooKeeper goes at the same moment, so a broker's
controlled shutdown could only wait for it; both kinds recover their logs on the next start as after
any crash.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from odradek.tasks.child_processes import die_with_parent


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
            preexec_fn=die_with_parent(signal.SIGKILL),
        )
