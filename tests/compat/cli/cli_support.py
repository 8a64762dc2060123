"""Running the real `odradek` command in a child process, and skipping what the broker cannot serve yet.

`requires_api` asks the broker's ApiVersions (through kafka-python) which API keys it serves, so tests of
a command whose API has not landed skip with the reason, and turn on by themselves once it does. Under
CI they fail instead (tests/support/requirements.py): there a missing API is a regression.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from odradek.protocol.api_keys import ApiKey
from tests.support.requirements import missing as missing_input

REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    raw_stdout: bytes

    def lines(self) -> list[str]:
        return self.stdout.splitlines()


def odradek(
    *arguments: str,
    bootstrap: str | None = None,
    stdin: bytes | str | None = None,
    timeout: float = 60.0,
) -> Run:
    """`python -m odradek.cli.main ARGUMENTS [--bootstrap-server BOOTSTRAP]`, waited for."""
    command = [sys.executable, "-m", "odradek.cli.main", *arguments]
    if bootstrap is not None:
        command += ["--bootstrap-server", bootstrap]
    data = stdin.encode() if isinstance(stdin, str) else stdin
    completed = subprocess.run(
        command,
        input=data if data is not None else b"",
        capture_output=True,
        timeout=timeout,
        env=cli_environment(),
        cwd=REPO,
    )
    return Run(
        completed.returncode,
        completed.stdout.decode(errors="replace"),
        completed.stderr.decode(errors="replace"),
        completed.stdout,
    )


def cli_environment() -> dict[str, str]:
    environment = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    environment.pop("ODRADEK_BOOTSTRAP_SERVER", None)
    return environment


@functools.cache
def served_api_keys(bootstrap: str) -> frozenset[int]:
    """The API keys the broker's ApiVersions advertises."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        return frozenset(int(key) for key in admin.api_versions())
    finally:
        admin.close()


def requires_api(bootstrap: str, *api_keys: ApiKey) -> None:
    """Skip the calling test (fail it under CI) unless the broker serves every one of `api_keys`."""
    missing = [key.name for key in api_keys if int(key) not in served_api_keys(bootstrap)]
    if missing:
        missing_input(f"the broker does not serve {', '.join(missing)} yet")


@functools.cache
def lists_all_topics(bootstrap: str) -> bool:
    """Whether librdkafka's all-topics Metadata request gets an answer (see `requires_all_topics_listing`)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=5)
    except KafkaException:
        return False
    return True


def requires_all_topics_listing(bootstrap: str) -> None:
    """Skip (fail under CI) unless the broker answers librdkafka's request for all topics.

    librdkafka (up to at least 2.16, confluentinc/librdkafka#5049) pads that Metadata v9+ request with
    three bytes; Kafka ignores trailing request bytes, odradek's codec closed the connection instead.
    """
    requires_api(bootstrap, ApiKey.METADATA)
    if not lists_all_topics(bootstrap):
        missing_input("the broker rejects librdkafka's padded all-topics Metadata request (librdkafka#5049)")


def table_rows(text: str, header_starts: str) -> list[dict[str, str]]:
    """The rows of the table whose header line starts with `header_starts`, as {column: value}.

    Columns are split on runs of spaces, so neither headers nor values may contain a space.
    """
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip().startswith(header_starts):
            headers = line.split()
            rows = []
            for row in lines[index + 1 :]:
                if not row.strip() or row.strip().endswith(":"):
                    break
                rows.append(dict(zip(headers, row.split(), strict=True)))
            return rows
    raise AssertionError(f"no table starting with {header_starts!r} in:\n{text}")
