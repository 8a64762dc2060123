"""Client setup for the commands: confluent-kafka configs, a reachability check, and an admin session.

confluent-kafka is imported inside functions so that `odradek broker` and `odradek --help` neither
need it installed nor pay for loading librdkafka.
"""

from __future__ import annotations

import argparse
import socket
from collections.abc import Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from odradek.cli.errors import CliError, kafka_error_message

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

ClientConfig = dict[str, str | int | float | bool]


def client_config(args: argparse.Namespace, **settings: str | int | float | bool) -> ClientConfig:
    """bootstrap.servers, quiet librdkafka logs, then --command-config, -X and the command's own settings.

    The command's settings come before the person's: `-X` can override anything.
    """
    config: ClientConfig = {
        "bootstrap.servers": args.bootstrap_server,
        "client.id": "odradek-cli",
        "log_level": 0,  # librdkafka's own log lines; failures reach the person as our messages
        "socket.timeout.ms": max(1000, int(args.request_timeout * 1000)),
    }
    config.update({key.replace("_", "."): value for key, value in settings.items()})
    if args.command_config:
        from odradek.config.properties import load_properties
        from odradek.config.types import ConfigError

        try:
            config.update(load_properties(args.command_config))
        except OSError as error:
            raise CliError(f"cannot read --command-config {args.command_config}: {error.strerror}") from None
        except ConfigError as error:
            raise CliError(f"--command-config {args.command_config}: {error}") from None
    config.update(dict(args.client_properties))
    return _java_settings(config)


#: Settings only Kafka's Java clients read, which a client.properties made for Kafka's tools holds.
_JAVA_ONLY = ("ssl.truststore.", "ssl.keystore.type", "sasl.jaas.config")


def _java_settings(config: ClientConfig) -> ClientConfig:
    """A client.properties written for Kafka's own tools, in librdkafka's names, for librdkafka and for
    the commands that speak the protocol themselves (wire.py), so both read the same settings: the JAAS
    login as sasl.username/sasl.password, JKS/PKCS12/PEM trust and key stores as PEM (librdkafka knows
    no trust store and no JKS), an empty ssl.endpoint.identification.algorithm as none."""
    endpoint = config.get("ssl.endpoint.identification.algorithm")
    empty_endpoint = isinstance(endpoint, str) and not endpoint.strip()
    if not empty_endpoint and not any(str(key).startswith(_JAVA_ONLY) for key in config):
        return config
    from odradek.spark.security import SecurityConfigError, translate_java_client_settings

    settings = {key: str(value) for key, value in config.items()}
    try:
        translate_java_client_settings(settings)
    except SecurityConfigError as error:
        raise CliError(str(error)) from None
    # settings left as they were keep their types (numbers, booleans)
    unchanged = {key: value for key, value in config.items() if settings.get(key) == str(value)}
    return {**settings, **unchanged}


def check_reachable(bootstrap: str, timeout: float) -> None:
    """Fail fast and plainly when no bootstrap server accepts a TCP connection."""
    reason = "no address given"
    for server in (s.strip() for s in bootstrap.split(",")):
        if not server:
            continue
        host, port = split_host_port(server)
        try:
            with socket.create_connection((host, port), timeout=min(timeout, 5.0)):
                return
        except OSError as error:
            reason = _reason(error)
    raise CliError(f"cannot reach broker at {bootstrap} ({reason})")


def split_host_port(server: str) -> tuple[str, int]:
    """``host:port``, ``[::1]:port`` or ``PLAINTEXT://host:port``; the port defaults to 9092."""
    if "://" in server:
        server = server.split("://", 1)[1]
    if server.startswith("["):
        host, _, rest = server[1:].partition("]")
        port_text = rest.lstrip(":")
    else:
        host, _, port_text = server.rpartition(":") if ":" in server else (server, "", "")
    try:
        port = int(port_text) if port_text else 9092
    except ValueError:
        raise CliError(f"bad bootstrap server {server!r}: the port must be a number") from None
    return host or "localhost", port


class Admin:
    """An AdminClient for one command, with the bootstrap and timeout its messages and waits use."""

    def __init__(self, args: argparse.Namespace) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap: str = args.bootstrap_server
        self.timeout: float = args.request_timeout
        check_reachable(self.bootstrap, self.timeout)
        self.config = client_config(args)
        self.client: AdminClient = AdminClient(self.config)

    @property
    def options(self) -> dict[str, Any]:
        """Keyword arguments every admin call takes: the request timeout."""
        return {"request_timeout": self.timeout}

    def wait(self, future: Future[Any], api: str, known: Mapping[int, str] | None = None) -> Any:
        """The future's result; a Kafka error becomes a CliError (its message from `known` if listed)."""
        from confluent_kafka import KafkaException

        try:
            return future.result(timeout=self.timeout + 5)
        except KafkaException as exception:
            error = exception.args[0]
            code = error.code()
            message = (known or {}).get(code) or kafka_error_message(error, self.bootstrap, api)
            raise CliError(message, kafka_code=code) from None
        except FutureTimeout:
            raise CliError(f"timed out waiting for {api} on the broker at {self.bootstrap}") from None


def _reason(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return "unknown host"
    if isinstance(error, TimeoutError | socket.timeout):
        return "timed out"
    return (error.strerror or str(error)).lower()


def topic_partitions(client: Any, topic: str, bootstrap: str, timeout: float) -> list[int]:
    """The partition ids of `topic` as a producer or consumer sees them (a Metadata request for it).

    A producer's request may create the topic, as Kafka's console producer's does when the broker
    allows auto-creation; a retriable error (a leader still being elected) is asked again.
    """
    import time

    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            metadata = client.list_topics(topic, timeout=max(0.1, deadline - time.monotonic()))
        except KafkaException as exception:
            raise CliError(kafka_error_message(exception.args[0], bootstrap, "Metadata")) from None
        info = metadata.topics.get(topic)
        error = None if info is None else info.error
        if info is not None and error is None and info.partitions:
            return sorted(info.partitions)
        if info is None or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
            raise CliError(f"topic '{topic}' does not exist", kafka_code=KafkaError.UNKNOWN_TOPIC_OR_PART)
        if (error is not None and not error.retriable()) or time.monotonic() >= deadline:
            reason = kafka_error_message(error, bootstrap, "Metadata") if error else "it has no partitions"
            raise CliError(f"topic '{topic}' is not available: {reason}")
        time.sleep(0.1)
