"""Kafka's command-line tools against Apache Kafka 3.9 itself (or, for a scenario whose `reference` is
"kafka-4-kraft", Kafka 4.x in KRaft mode): the golden transcripts the tool tests compare odradek with
(tests/compat/kafka_tools; docs/testing.md).

    make kafka-tools-reference                        # record every golden transcript again
    .venv/bin/python -m tests.support.kafka_tools_reference --check          # compare, write nothing
    .venv/bin/python -m tests.support.kafka_tools_reference --brokers 3 --line kafka-4 --scenario topics
    .venv/bin/python -m tests.support.kafka_tools_reference --broker odradek --print --scenario topics

Each scenario (tests/support/tool_scenarios) runs with each tool line against one Kafka broker, then
three, with the settings odradek's targets have (tests/support/tool_scenarios/targets.py), and its
transcript is written to tests/compat/kafka_tools/golden/<line>/<single-node|cluster>/<scenario>.txt.
`--check` compares instead: run it twice after changing a scenario, since a transcript that differs
between two runs against Kafka has something left to normalise. `--broker odradek` runs the same
against odradek (what the pytest modules do), to look at a transcript while working on a scenario.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import pytest

from tests.support import java_suite, kafka_tools
from tests.support.tool_scenarios import SCENARIOS, Scenario, Session, StepFailed
from tests.support.tool_scenarios.session import ToolTarget
from tests.support.tool_scenarios.targets import KafkaTarget, OdradekCluster, OdradekSingleNode
from tests.support.zookeeper import ZooKeeperServer

GOLDEN = kafka_tools.PROJECT / "golden"
#: Scenarios whose transcript differs from Kafka's for a reason not fixed yet (java_suite's format,
#: `test` naming the scenario): strict expected failures.
KNOWN_DIFFERENCES = kafka_tools.PROJECT / "known-differences.toml"


def golden_path(line: str, kind: str, name: str) -> Path:
    return GOLDEN / line / kind / f"{name}.txt"


def run_scenario(
    installation: kafka_tools.Installation, target: ToolTarget, chosen: Scenario, work: Path
) -> Session:
    """Run `chosen` to its end (its background tools stopped); raises StepFailed with what it ran."""
    work.mkdir(parents=True, exist_ok=True)
    session = Session(installation, target, work)
    try:
        chosen.run(session)
    except StepFailed as failure:
        raise StepFailed(
            f"{failure}\n\nso far:\n{session.text()}\n\nraw:\n" + "\n".join(session.raw)
        ) from None
    finally:
        session.stop_background()
    return session


def difference(expected: str, actual: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            f"{name} (Apache Kafka)",
            f"{name} (this run)",
        )
    )


def scenarios_for(line: str, kind: str, names: Sequence[str] | None = None) -> list[Scenario]:
    """The scenarios `line` runs against `kind`, those that stop brokers last."""
    chosen = [
        s
        for s in SCENARIOS.values()
        if line in s.lines and kind in s.targets and (not names or s.name in names)
    ]
    return sorted(chosen, key=lambda s: s.disruptive)


# ----- as pytest tests (tests/compat/kafka_tools) ------------------------------------------------


#: The tool lines `make test` runs against each kind of target. What the broker answers is the same
#: whichever line asks, and the lines differ in their tools, which the single node shows: the 3.9 tools
#: run against it only, to keep `make test` short. The reference runner records and checks every line
#: against both (`--line kafka-3.9 --brokers 3 --check`).
TESTED_LINES = {"single-node": kafka_tools.LINES, "cluster": ("kafka-4",)}


def pytest_params(kind: str, disruptive: bool = False) -> list[object]:
    """(line, scenario) of every scenario of `kind` (those that stop brokers, or the others), each
    known difference a strict expected failure."""
    differences = java_suite.known_differences(KNOWN_DIFFERENCES)
    params: list[object] = []
    for line in TESTED_LINES[kind]:
        for chosen in scenarios_for(line, kind):
            if chosen.disruptive != disruptive:
                continue
            reason = next(
                (d.reason for d in differences if d.test == chosen.name and d.applies(line, kind)), None
            )
            marks = [pytest.mark.xfail(reason=f"known difference: {reason}", strict=True)] if reason else []
            params.append(pytest.param(line, chosen.name, id=f"{line}-{chosen.name}", marks=marks))
    return params


class StartedTarget(ToolTarget, Protocol):
    def start(self) -> object: ...

    def stop(self) -> None: ...


class LineTargets:
    """A target of its own for each tool line (both lines' scenarios use the same topic, group and user
    names), started when a line's first test asks for it, the previous line's stopped then: a
    module's tests come line by line (`pytest_params`)."""

    def __init__(self, make: Callable[[str], StartedTarget]) -> None:
        self.make = make
        self.line: str | None = None
        self.current: StartedTarget | None = None

    def get(self, line: str) -> StartedTarget:
        if self.line != line or self.current is None:
            self.stop()
            self.current = self.make(line)
            self.line = line
            self.current.start()
        return self.current

    def stop(self) -> None:
        if self.current is not None and self.line is not None:
            current, line, self.current, self.line = self.current, self.line, None, None
            current.stop()
            kafka_tools.restart(line)  # its tools' leftovers call the brokers just stopped


@contextmanager
def odradek_cluster_lines(
    zookeeper: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory, prefix: str
) -> Iterator[LineTargets]:
    """A 3-broker odradek cluster of its own per tool line, each in a ZooKeeper chroot of its own."""

    def cluster(line: str) -> OdradekCluster:
        connect = f"{zookeeper.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
        return OdradekCluster(tmp_path_factory.mktemp(f"{prefix}-{line}"), connect)

    started = LineTargets(cluster)
    try:
        yield started
    finally:
        started.stop()


def check(target: ToolTarget, line: str, name: str, work: Path) -> None:
    """Run scenario `name` with `line`'s tools against `target` (odradek): its transcript must be
    Kafka's (a scenario run against odradek only asserts what must hold itself)."""
    chosen = SCENARIOS[name]
    try:
        session = run_scenario(kafka_tools.install(line), target, chosen, work)
    except StepFailed as failure:
        pytest.fail(
            f"{name} ({line} against odradek's {target.kind}) could not go on: {failure}", pytrace=False
        )
    if chosen.odradek_only:
        return
    path = golden_path(line, target.kind, name)
    if not path.exists():
        pytest.fail(
            f"no transcript of Apache Kafka for {name} ({path}): record it with `make kafka-tools-reference`",
            pytrace=False,
        )
    actual = session.text()
    if actual != path.read_text():
        (work / "transcript.txt").write_text(actual)
        pytest.fail(
            f"Kafka's tools ({line}) print against odradek's {target.kind} what they do not print against "
            f"Apache Kafka:\n{difference(path.read_text(), actual, name)}\n"
            f"--- every step as it ran:\n" + "\n".join(session.raw),
            pytrace=False,
        )


@contextmanager
def target_of(broker: str, brokers: int, work: Path, reference: str = "kafka-3.9") -> Iterator[ToolTarget]:
    """odradek, or (`broker` "kafka") the Apache Kafka of `reference` (Scenario.reference)."""
    zookeeper = ZooKeeperServer(work).start()
    started: KafkaTarget | OdradekCluster | OdradekSingleNode
    try:
        if broker == "kafka" and reference == "kafka-4-kraft":
            started = KafkaTarget.kraft(brokers, work / "kafka")
        elif broker == "kafka":
            started = KafkaTarget.zookeeper_mode(brokers, work / "kafka", zookeeper)
        elif brokers == 1:
            started = OdradekSingleNode(work / "odradek")
        else:
            connect = f"{zookeeper.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
            started = OdradekCluster(work / "odradek", connect)
        started.start()
        try:
            yield started
        finally:
            started.stop()
    finally:
        zookeeper.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--broker", choices=("kafka", "odradek"), default="kafka")
    parser.add_argument("--brokers", type=int, choices=(1, 3), action="append", help="default: 1, then 3")
    parser.add_argument("--line", choices=kafka_tools.LINES, action="append", help="default: every line")
    parser.add_argument("--scenario", action="append", help="default: every scenario")
    parser.add_argument("--check", action="store_true", help="compare with the golden files, write nothing")
    parser.add_argument("--print", action="store_true", help="print each transcript")
    parser.add_argument("--keep", type=Path, help="keep the brokers' data and logs here")
    args = parser.parse_args(argv)
    unknown = set(args.scenario or []) - set(SCENARIOS)
    if unknown:
        parser.error(f"no scenario {sorted(unknown)}; there are {sorted(SCENARIOS)}")
    record = args.broker == "kafka" and not args.check and not args.print
    work = args.keep or Path(tempfile.mkdtemp(prefix="kafka-tools-reference-"))
    work.mkdir(parents=True, exist_ok=True)
    failures = 0
    try:
        for line in args.line or kafka_tools.LINES:
            installation = kafka_tools.install(line)
            for brokers in args.brokers or [1, 3]:
                kind = "single-node" if brokers == 1 else "cluster"
                runs = [
                    s
                    for s in scenarios_for(line, kind, args.scenario)
                    if not (s.odradek_only and args.broker == "kafka")
                ]
                for reference in sorted({s.reference for s in runs}):
                    # brokers of their own for each line (the same names in both lines' scenarios)
                    place = work / f"{args.broker}-{brokers}-{line}-{reference}"
                    with target_of(args.broker, brokers, place, reference) as target:
                        for chosen in runs:  # those that stop brokers last (scenarios_for)
                            if chosen.reference == reference:
                                failures += _one(installation, target, chosen, work, record, args, _say)
                    kafka_tools.restart(line)
    except (pytest.skip.Exception, pytest.fail.Exception) as error:  # a missing tool, a failed build
        print(error, file=sys.stderr)
        return 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    _say("every transcript as expected" if not failures else f"{failures} failed")
    return 0 if failures == 0 else 1


def _one(
    installation: kafka_tools.Installation,
    target: ToolTarget,
    chosen: Scenario,
    work: Path,
    record: bool,
    args: argparse.Namespace,
    print_: Callable[[str], None],
) -> int:
    where = f"[{installation.line} vs {target.broker} {target.kind}] {chosen.name}"
    began = time.monotonic()
    try:
        session = run_scenario(
            installation, target, chosen, work / f"{installation.line}-{target.kind}-{chosen.name}"
        )
    except StepFailed as failure:
        print_(f"{where}: FAILED\n{failure}")
        return 1
    where += f" ({time.monotonic() - began:.1f} s)"
    path = golden_path(installation.line, target.kind, chosen.name)
    if args.print:
        print_(f"{where}:\n{session.text()}")
        return 0
    if record:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(session.text())
        print_(f"{where}: recorded {path.relative_to(kafka_tools.PROJECT)}")
        return 0
    expected = path.read_text() if path.exists() else ""
    if expected == session.text():
        print_(f"{where}: as recorded")
        return 0
    print_(f"{where}: DIFFERS\n{difference(expected, session.text(), chosen.name)}")
    return 1


def _say(text: str) -> None:
    print(text, flush=True)


if __name__ == "__main__":
    sys.exit(main())
