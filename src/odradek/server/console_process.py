"""The web console a broker runs beside itself when ``console.port`` is set (odradek-specific, off by
default): ``odradek console`` in a child process, pointed at this broker's own listener.

A child process, not the broker's loop: the console's Kafka client (confluent-kafka) blocks in threads
of its own and renders pages, work that must never delay a request. It talks to the broker only through
the Kafka protocol, as it does to any cluster, and binds to 127.0.0.1 like the command.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import logging
import signal
import subprocess
import sys

log = logging.getLogger("odradek.broker")

STOP_SECONDS = 5.0


class ConsoleUnavailableError(Exception):
    """``console.port`` is set but the console's packages (the `console` extra) are not installed."""


def check_console_installed() -> None:
    """Refuse at start-up, in one line, a console.port the broker could not honour."""
    missing = [name for name in ("uvicorn", "starlette", "jinja2") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConsoleUnavailableError(
            f"console.port is set but the console is not installed (missing {', '.join(missing)}): "
            "pip install 'odradek[console]', or unset console.port"
        )


class ConsoleProcess:
    """``odradek console`` for this broker on 127.0.0.1:``port``, stopped with the broker."""

    def __init__(self, port: int, bootstrap: str) -> None:
        self.port = port
        self.bootstrap = bootstrap
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "odradek.cli.main", "console"]
        command += ["--bootstrap-server", self.bootstrap, "--port", str(self.port)]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=_end_with_broker)
        log.info(
            "console started",
            extra={"fields": {"url": f"http://127.0.0.1:{self.port}/", "pid": self.process.pid}},
        )

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_PR_SET_PDEATHSIG = 1


def _end_with_broker() -> None:
    """Linux: the console gets SIGTERM when the broker dies, even by SIGKILL, so none is left behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
