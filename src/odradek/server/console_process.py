"""The web console a broker runs beside itself when ``console.port`` is set (odradek-specific, off by
default): ``odradek console`` in a child process, pointed at this broker's own listener.

A child process, not the broker's loop: the console's Kafka client (confluent-kafka) blocks in threads
of its own and renders pages, work that must never delay a request. It talks to the broker only through
the Kafka protocol, as it does to any cluster, and serves on ``console.host`` (127.0.0.1 unless told).

Its settings reach it as the command's options, and its secrets only as the names of files holding
them (``console.basic.auth.file``, ``console.command.config``): every user of the machine can read a
process' command line.
"""

from __future__ import annotations

import importlib.util
import logging
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from odradek.config.broker import BrokerConfig
from odradek.config.console_users import AuthFileError, load_users
from odradek.config.properties import load_properties
from odradek.config.types import ConfigError
from odradek.tasks.child_processes import die_with_parent, stop_child

log = logging.getLogger("odradek.broker")

STOP_SECONDS = 5.0


class ConsoleUnavailableError(Exception):
    """``console.port`` is set but the console's packages (the `console` extra) are not installed, or
    its users file or client settings cannot be used."""


def check_console_installed() -> None:
    """Refuse at start-up, in one line, a console.port the broker could not honour."""
    missing = [name for name in ("uvicorn", "starlette", "jinja2") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConsoleUnavailableError(
            f"console.port is set but the console is not installed (missing {', '.join(missing)}): "
            "pip install 'odradek[console]', or unset console.port"
        )


def check_console_files(basic_auth_file: str | None, command_config: str | None) -> None:
    """Refuse at start-up, in one line, console files the console would refuse as it starts (it would
    then be gone, with the broker running on as if it served)."""
    if basic_auth_file is not None:
        try:
            load_users(Path(basic_auth_file), "console.basic.auth.file")
        except AuthFileError as error:
            raise ConsoleUnavailableError(str(error)) from None
    if command_config is not None:
        try:
            load_properties(command_config)
        except OSError as error:
            raise ConsoleUnavailableError(
                f"console.command.config: cannot read {command_config}: {error.strerror}"
            ) from None
        except ConfigError as error:
            raise ConsoleUnavailableError(f"console.command.config {command_config}: {error}") from None


@dataclass(frozen=True)
class ConsoleOptions:
    """What the broker's configs say of its console (the ``console.*`` settings)."""

    port: int
    host: str = "127.0.0.1"
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    basic_auth_file: str | None = None
    command_config: str | None = None
    #: The broker's own metrics endpoint, when metrics.port is set (the console's Clients page).
    metrics_url: str | None = None

    @classmethod
    def of(cls, config: BrokerConfig, metrics_url: str | None) -> ConsoleOptions:
        """The options the ``console.*`` settings give (``console.port`` set)."""
        assert config.console_port is not None
        return cls(
            port=config.console_port,
            host=config.console_host,
            allowed_hosts=tuple(config.console_allowed_hosts),
            basic_auth_file=config.console_basic_auth_file,
            command_config=config.console_command_config,
            metrics_url=metrics_url,
        )

    def arguments(self) -> list[str]:
        """``odradek console``'s options; files are named, their contents never put here."""
        arguments = ["--host", self.host, "--port", str(self.port)]
        for name in self.allowed_hosts:
            arguments += ["--allowed-host", name]
        if self.basic_auth_file is not None:
            arguments += ["--basic-auth-file", self.basic_auth_file]
        if self.command_config is not None:
            arguments += ["--command-config", self.command_config]
        if self.metrics_url is not None:
            arguments += ["--metrics-url", self.metrics_url]
        return arguments


class ConsoleProcess:
    """``odradek console`` for this broker on ``console.host``:``console.port``, stopped with the broker."""

    def __init__(self, options: ConsoleOptions, bootstrap: str) -> None:
        self.options = options
        self.bootstrap = bootstrap
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [sys.executable, "-m", "odradek.cli.main", "console", "--bootstrap-server", self.bootstrap]
        command += self.options.arguments()
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent(signal.SIGTERM)
        )
        host = f"[{self.options.host}]" if ":" in self.options.host else self.options.host
        log.info(
            "console started",
            extra={"fields": {"url": f"http://{host}:{self.options.port}/", "pid": self.process.pid}},
        )

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_child(process, STOP_SECONDS)
