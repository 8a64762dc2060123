"""Failures of the client commands: one exception type, its exit code, and Kafka errors said plainly.

A command raises `CliError` with a sentence meant for a person ("topic 'x' already exists"); the
`command` decorator prints it as ``odradek <command>: <sentence>`` on stderr and returns its exit code.
Exit codes: 0 success, 1 the operation failed, 2 the command line was wrong (as argparse uses),
130 interrupted before anything useful happened.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

FAILED = 1
USAGE = 2
INTERRUPTED = 130

Run = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A failure to report to the person at the terminal, without a traceback."""

    def __init__(self, message: str, exit_code: int = FAILED, kafka_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.kafka_code = kafka_code  # the Kafka or librdkafka error code behind it, when there is one


def command(name: str) -> Callable[[Run], Run]:
    """Wrap a command's `run(args)`: errors become one line on stderr and an exit code."""

    def decorate(run: Run) -> Run:
        @functools.wraps(run)
        def wrapper(args: argparse.Namespace) -> int:
            try:
                return run(args)
            except CliError as error:
                _say(name, error.message)
                return error.exit_code
            except KeyboardInterrupt:
                _say(name, "interrupted")
                return INTERRUPTED
            except BrokenPipeError:
                _silence_stdout()
                return 0
            except Exception as error:
                message = _client_error_message(error, getattr(args, "bootstrap_server", ""))
                if message is None:
                    raise
                _say(name, message)
                return FAILED

        return wrapper

    return decorate


def kafka_error_message(error: KafkaError, bootstrap: str, api: str = "") -> str:
    """A plain sentence for a librdkafka error; `api` names the Kafka API the operation needs."""
    from confluent_kafka import KafkaError

    code = error.code()
    if code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE):
        return f"cannot reach broker at {bootstrap}"
    if code == KafkaError._TRANSPORT:
        return f"lost the connection to the broker at {bootstrap} ({broker_text(error)})"
    if code in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION):
        what = api or "this operation"
        return f"the broker at {bootstrap} does not support {what}"
    if code in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT):
        waiting = f" for {api}" if api else ""
        return f"timed out waiting{waiting} on the broker at {bootstrap}"
    return broker_text(error)


def broker_text(error: KafkaError) -> str:
    """librdkafka's description without its "Broker: " / "Local: " prefix, starting in lower case."""
    text = error.str().replace("Broker: ", "").replace("Local: ", "")
    text = text.rstrip(".")
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def _client_error_message(error: Exception, bootstrap: str) -> str | None:
    try:
        from confluent_kafka import KafkaException
    except ImportError:
        return None
    if isinstance(error, KafkaException) and error.args and hasattr(error.args[0], "code"):
        return kafka_error_message(error.args[0], bootstrap)
    return None


def _say(name: str, message: str) -> None:
    print(f"odradek {name}: {message}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """After the reader of our stdout went away (`| head`), let the interpreter exit without a traceback."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
