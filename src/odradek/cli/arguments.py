"""Arguments shared by the client commands, and parsers for the values people type.

The parsers are argparse `type=` functions: a bad value becomes a usage error (exit code 2) naming
the option, before any connection is made.
"""

from __future__ import annotations

import argparse
import os
from datetime import datetime

from odradek.client.security import is_secret

DEFAULT_BOOTSTRAP = "localhost:9092"
BOOTSTRAP_ENV = "ODRADEK_BOOTSTRAP_SERVER"


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """--bootstrap-server, --command-config, -X and --request-timeout, in their own help section."""
    group = parser.add_argument_group("connection")
    default = os.environ.get(BOOTSTRAP_ENV) or DEFAULT_BOOTSTRAP
    group.add_argument(
        "--bootstrap-server",
        default=default,
        metavar="HOST:PORT",
        help=f"broker(s) to connect to, comma-separated (default: {default}; or set ${BOOTSTRAP_ENV})",
    )
    group.add_argument(
        "--command-config",
        metavar="FILE",
        help="a properties file of client settings (librdkafka names, e.g. security.protocol)",
    )
    group.add_argument(
        "-X",
        dest="client_properties",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="one client setting (librdkafka name); repeatable. Not for passwords: other users of this "
        "machine can read a command line; put them in --command-config",
    )
    group.add_argument(
        "--request-timeout",
        type=positive_float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the broker to answer (default: 30)",
    )


def secrets_on_command_line(args: argparse.Namespace) -> list[str]:
    """The `-X` settings of `args` whose values are secrets: every user of the machine can read a command
    line (ps, /proc/PID/cmdline), so the command warns about each (a --command-config file is not)."""
    return [key for key, _ in getattr(args, "client_properties", []) if is_secret(key)]


def key_value(text: str) -> tuple[str, str]:
    """``key=value``; the value may be empty and may contain ``=``."""
    key, separator, value = text.partition("=")
    key = key.strip()
    if not separator or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def config_list(text: str) -> list[tuple[str, str]]:
    """kafka-configs' ``k=v,k2=v2``; a value holding commas is written in brackets: ``k=[a,b]``."""
    pairs: list[tuple[str, str]] = []
    for item in _split_outside_brackets(text):
        key, value = key_value(item)
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        pairs.append((key, value))
    if not pairs:
        raise argparse.ArgumentTypeError("expected k=v[,k2=v2...]")
    return pairs


def name_list(text: str) -> list[str]:
    """Comma-separated names: ``a,b,c``."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected one or more comma-separated names")
    return names


def timestamp_ms(text: str) -> int:
    """Milliseconds since the epoch, or ISO-8601 (``2024-05-01T12:00:00Z``); no zone means local time."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected milliseconds since the epoch or ISO-8601 like 2024-05-01T12:00:00Z, got {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return round(moment.timestamp() * 1000)


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def positive_int(text: str) -> int:
    value = _int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def separator(text: str) -> str:
    r"""A separator as typed on a shell, with ``\t`` and ``\n`` understood."""
    value = text.replace("\\t", "\t").replace("\\n", "\n")
    if not value:
        raise argparse.ArgumentTypeError("the separator must not be empty")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _split_outside_brackets(text: str) -> list[str]:
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item for item in (i.strip() for i in items) if item]
