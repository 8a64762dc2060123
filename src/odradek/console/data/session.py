"""One admin client for the console's lifetime, made lazily so the console starts while the cluster is down.

The client side is the CLI's (`odradek.cli.client.Admin`): the same configs, `--command-config` and
error sentences. Its `CliError` becomes a `ClusterError`, which the pages show on the error page.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import TypeVar

from odradek.cli.client import Admin
from odradek.cli.errors import CliError
from odradek.console.settings import ConsoleSettings

T = TypeVar("T")


class ClusterError(Exception):
    """The cluster could not answer, or refused: `message` is a sentence for a person."""

    def __init__(
        self,
        message: str,
        unreachable: bool = False,
        kafka_code: int | None = None,
        brokers: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.unreachable = unreachable
        self.kafka_code = kafka_code
        #: The broker(s) that do not answer when the others do (a group's coordinator), for the page.
        self.brokers = brokers


class Session:
    """The settings and the admin client built from them."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self._admin: Admin | None = None
        self._lock = threading.Lock()

    @property
    def bootstrap(self) -> str:
        return self.settings.bootstrap_server

    def arguments(self) -> argparse.Namespace:
        """The settings as the CLI's commands take them."""
        return argparse.Namespace(
            bootstrap_server=self.settings.bootstrap_server,
            command_config=self.settings.command_config,
            client_properties=list(self.settings.client_properties),
            request_timeout=self.settings.request_timeout,
        )

    def admin(self) -> Admin:
        """The admin client; the first call (and the first after a failed one) checks the cluster answers."""
        with self._lock:
            if self._admin is None:
                self._admin = call(lambda: Admin(self.arguments()))
            return self._admin

    def run(self, operation: Callable[[Admin], T]) -> T:
        """`operation(admin)`, its CliError turned into a ClusterError.

        A call that times out drops the admin client, so that the next call makes a new one: after a
        broker restarted, librdkafka's client kept timing out on the group coordinator's requests
        (OffsetFetch, DescribeGroups) for over a minute while the broker answered them at once.
        """
        admin = self.admin()
        try:
            return call(lambda: operation(admin))
        except ClusterError as error:
            if error.unreachable:
                with self._lock:
                    if self._admin is admin:
                        self._admin = None
            raise


def call(operation: Callable[[], T]) -> T:
    try:
        return operation()
    except CliError as error:
        unreachable = error.message.startswith(("cannot reach", "lost the connection", "timed out"))
        raise ClusterError(error.message, unreachable=unreachable, kafka_code=error.kafka_code) from None
