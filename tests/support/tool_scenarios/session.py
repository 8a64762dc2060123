"""A scenario of Kafka's command-line tools, and the transcript it leaves.

A scenario is a short story told with the tools (create a topic, describe it, alter it...). It runs
against a target (odradek or Apache Kafka 3.9; one broker or three) through a `Session`, which runs each
tool and writes a transcript: the command, then what the tool printed, with what differs between runs
and between brokers for no fault of either (broker addresses, topic and member ids, timestamps, the log
directories' paths, column widths that follow them) replaced by placeholders. Against Kafka the
transcript is recorded as the golden file (tests/support/kafka_tools_reference.py); against odradek it
must equal it (tests/compat/kafka_tools).

What a tool prints that no run can repeat (a perf test's rates, a proposed random assignment, a
verifiable client's events) is summarised by the scenario before it goes into the transcript: the
summary says what must hold (every record acknowledged, the counts).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tests.support.kafka_tools import Background, Installation, ToolResult

#: The two kinds of target, as for the Java suite.
TARGETS = ("single-node", "cluster")


class ToolTarget(Protocol):
    """The brokers a scenario runs against."""

    @property
    def kind(self) -> str: ...  # one of TARGETS

    @property
    def broker(self) -> str: ...  # "odradek" or "kafka-3.9"

    @property
    def addresses(self) -> Mapping[int, tuple[str, int]]: ...

    @property
    def sasl_addresses(self) -> Mapping[int, tuple[str, int]]: ...  # SASL_PLAINTEXT, SCRAM-SHA-512

    def log_dir(self, node: int) -> Path: ...

    def stop_broker(self, node: int) -> None: ...

    def start_broker(self, node: int) -> None: ...


class StepFailed(AssertionError):
    """A step a scenario needs (its set-up, a wait) did not happen: the scenario cannot go on."""


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Session], None]
    targets: tuple[str, ...] = TARGETS
    #: The tool lines it runs with (some flags and tools exist in one line only).
    lines: tuple[str, ...] = ("kafka-4", "kafka-3.9")
    #: Runs against odradek only (what Kafka 3.9 serves only in KRaft mode): no golden transcript,
    #: the scenario asserts what must hold itself.
    odradek_only: bool = False
    #: Stops and starts brokers: run on brokers of its own (and last, when recorded).
    disruptive: bool = False
    #: The Apache Kafka its transcript is recorded against: 3.9 in ZooKeeper mode, or, for what only a
    #: Kafka 4.x broker serves (share groups, client metrics), "kafka-4-kraft".
    reference: str = "kafka-3.9"


SCENARIOS: dict[str, Scenario] = {}


def scenario(
    targets: Sequence[str] = TARGETS,
    lines: Sequence[str] | None = None,
    odradek_only: bool = False,
    disruptive: bool = False,
    reference: str = "kafka-3.9",
) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    """Register a scenario named after its function (underscores become hyphens)."""

    def register(run: Callable[[Session], None]) -> Callable[[Session], None]:
        name = run.__name__.replace("_", "-")
        every_line = ("kafka-4", "kafka-3.9")
        SCENARIOS[name] = Scenario(
            name, run, tuple(targets), tuple(lines or every_line), odradek_only, disruptive, reference
        )
        return run

    return register


@dataclass
class Session:
    installation: Installation
    target: ToolTarget
    work: Path
    transcript: list[str] = field(default_factory=list)
    #: Raw output of every step, for the failure report.
    raw: list[str] = field(default_factory=list)
    background: list[Background] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.normaliser = Normaliser(self.target, self.work)

    @property
    def line(self) -> str:
        return self.installation.line

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.target.addresses.values())

    @property
    def sasl_bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.target.sasl_addresses.values())

    @property
    def cluster(self) -> bool:
        return self.target.kind == "cluster"

    @property
    def replication(self) -> int:
        return len(self.target.addresses)

    def file(self, name: str, content: str) -> str:
        """Write a file a tool reads (a JSON plan, a command config); returns its path."""
        path = self.work / name
        path.write_text(content)
        return str(path)

    def run(
        self,
        tool: str,
        *args: str,
        stdin: str | None = None,
        sort: bool = False,
        shown: Callable[[str], str] | None = None,
        timeout: float = 60.0,
    ) -> ToolResult:
        """Run `tool` and add it to the transcript. `{bootstrap}` in an argument is the target's
        bootstrap servers. `sort`: the tool prints its lines in no set order (a set, answers of several
        brokers). `shown`: what of its stdout (as printed) goes into the transcript, when not all of
        it can repeat."""
        result = self.quiet(tool, *args, stdin=stdin, timeout=timeout, check=False)
        out = self.normaliser(shown(result.stdout) if shown is not None else result.stdout)
        if sort:
            out = "\n".join(sorted(out.splitlines()))
        entry = [f"$ {tool} {self.normaliser(' '.join(self._expand(args)))}"]
        entry += [line for line in out.splitlines()]
        entry += [f"! {line}" for line in self.normaliser(result.stderr).splitlines() if line.strip()]
        if result.exit_code != 0:
            entry.append(f"exit {result.exit_code}")
        self.transcript.append("\n".join(entry))
        return result

    def quiet(
        self, tool: str, *args: str, stdin: str | None = None, timeout: float = 60.0, check: bool = True
    ) -> ToolResult:
        """Run `tool` without adding it to the transcript (set-up); with `check`, it must succeed."""
        expanded = self._expand(args)
        try:
            result = self.installation.run(tool, expanded, stdin=stdin, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            raise StepFailed(
                f"{tool} {' '.join(expanded)} did not end within {timeout} s; it printed:\n"
                f"{_text(expired.stdout)}\n--- stderr\n{_text(expired.stderr)}"
            ) from None
        self.raw.append(
            f"$ {tool} {' '.join(expanded)}\n--- exit {result.exit_code}\n--- stdout\n{result.stdout}"
            f"--- stderr\n{result.stderr}--- log\n{result.log[-4000:]}"
        )
        if check and result.exit_code != 0:
            raise StepFailed(f"{tool} {' '.join(expanded)} exited {result.exit_code}:\n{result.stderr}")
        return result

    def start(self, tool: str, *args: str) -> Background:
        """Start `tool` in the background (stopped at the end of the scenario at the latest)."""
        work = self.work / f"background-{len(self.background)}"
        started = self.installation.start(tool, self._expand(args), work)
        self.background.append(started)
        return started

    def note(self, text: str) -> None:
        """A line of the transcript that is not a tool's output (what a summary found)."""
        self.transcript.append(f"# {text}")

    def stop_background(self) -> None:
        for process in self.background:
            process.stop()

    def text(self) -> str:
        return "\n\n".join(self.transcript) + "\n"

    def _expand(self, args: Sequence[str]) -> list[str]:
        return [
            arg.replace("{bootstrap}", self.bootstrap).replace("{sasl_bootstrap}", self.sasl_bootstrap)
            for arg in args
        ]


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def wait_for(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise StepFailed(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


# ----- normalising ---------------------------------------------------------------------------------

_TOPIC_ID = re.compile(r"(TopicId: ?)[A-Za-z0-9_-]{22}")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
#: Milliseconds since the epoch from 2017 to 2286: a record's or a transaction's time.
_EPOCH_MS = re.compile(r"(?<![\d.])1[5-9]\d{11}(?![\d.])")
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?")
#: A stack trace's frames (and "... N more"): where in the tool an exception went by, no fact about the
#: broker (and the frames of the JVM the tools share, tests/support/kafka_tools.py, would be there too).
_STACK_FRAME = re.compile(r"^\s*(?:at [\w$.<>/-]+\(.*\)|\.\.\. \d+ more)$")
#: Column padding: tables pad to their widest cell, which a placeholder changes.
_PADDING = re.compile(r"(?<=\S) {2,}")
#: An empty list of eligible leader replicas (KIP-966) in kafka-topics' description. Kafka 4.x's tool
#: prints N/A when the partitions came from Metadata (Kafka 3.9 in ZooKeeper mode, which has no
#: DescribeTopicPartitions) and the list when they came from DescribeTopicPartitions (odradek, Kafka 4.x
#: in KRaft mode): an empty list says what N/A says (no eligible leader replica). A non-empty one stays.
_NO_ELR = re.compile(r"\b(Elr|LastKnownElr): (?=\t|$)", re.MULTILINE)


class Normaliser:
    """What differs between two runs of a scenario, and between Kafka and odradek, for no fault of
    either: replaced by placeholders (the same value keeps the same placeholder within a session)."""

    def __init__(self, target: ToolTarget, work: Path) -> None:
        self.replacements: list[tuple[str, str]] = []
        addresses = target.addresses
        self.replacements.append((",".join(f"{h}:{p}" for h, p in addresses.values()), "<bootstrap>"))
        sasl = target.sasl_addresses
        self.replacements.append((",".join(f"{h}:{p}" for h, p in sasl.values()), "<sasl-bootstrap>"))
        for node, (host, port) in addresses.items():
            self.replacements.append((f"{host}:{port}", f"<broker-{node}>"))
            self.replacements.append((f"{host}/{port}", f"<broker-{node}>"))
        for node, (host, port) in sasl.items():
            self.replacements.append((f"{host}:{port}", f"<sasl-broker-{node}>"))
            self.replacements.append((f"{host}/{port}", f"<sasl-broker-{node}>"))
        for node in addresses:
            self.replacements.append((str(target.log_dir(node)), f"<log-dir-{node}>"))
        self.replacements.append((str(work), "<work>"))

    def __call__(self, text: str) -> str:
        for value, placeholder in self.replacements:
            text = text.replace(value, placeholder)
        text = _TOPIC_ID.sub(r"\1<topic-id>", text)
        text = _UUID.sub("<uuid>", text)
        text = _EPOCH_MS.sub("<timestamp>", text)
        text = _ISO_TIME.sub("<datetime>", text)
        text = _NO_ELR.sub(r"\1: N/A", text)
        lines = (line for line in text.splitlines() if not _STACK_FRAME.match(line))
        return "\n".join(_PADDING.sub(" ", line).rstrip() for line in lines)


def columns(text: str, **placeholders: str) -> str:
    """A table (a header line, then rows) with the named columns' values replaced: `ProducerId="<pid>"`.
    Columns are split on runs of whitespace (the normaliser leaves one space)."""
    lines = text.splitlines()
    header_at = next(
        (i for i, line in enumerate(lines) if any(n in line.split() for n in placeholders)), None
    )
    if header_at is None:
        return text
    header = lines[header_at].split()
    out = lines[: header_at + 1]
    for line in lines[header_at + 1 :]:
        cells = line.split()
        if len(cells) == len(header):
            cells = [placeholders.get(name, cell) for name, cell in zip(header, cells, strict=True)]
            line = " ".join(cells)
        out.append(line)
    return "\n".join(out)
