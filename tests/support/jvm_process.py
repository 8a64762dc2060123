"""A JVM a test starts, SIGKILLs and starts again (a Streams instance, a Connect worker): its output
appended to one log across restarts, and it dies with the test process."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.support.broker_process import _die_with_parent, terminate

STOP_TIMEOUT_S = 40.0


class JvmProcess:
    """`command` run as a child whose stdout and stderr go to `log_path`."""

    def __init__(self, name: str, command: list[str], log_path: Path) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"--- {self.name} starts\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
            )

    def kill(self) -> None:
        """SIGKILL: nothing closed, committed or flushed."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S: the exit code, None if never started."""
        if self.process is None:
            return None
        code = terminate(self.process, STOP_TIMEOUT_S)
        self.process = None
        return code

    def exited(self) -> int | None:
        """The exit code if the JVM ended by itself."""
        return None if self.process is None else self.process.poll()
