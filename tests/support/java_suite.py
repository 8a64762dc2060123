"""Apache Kafka's Java clients against odradek: the JUnit suite in tests/compat/java, as pytest tests.

The Maven project there is built once per kafka-clients line (`LINES`) into `target/<line>/`, with its
dependencies in the repository's `.cache/maven` (filled on first use; `make java-compat` builds it by
hand). A run is one JVM per line: the JUnit console launcher runs every test class against one target
(a single node or the 3-broker cluster, named by `-Dodradek.bootstrap` and `-Dodradek.brokers`) and
writes JUnit's XML report. Each JUnit test method is one pytest test (`declared_tests` reads them from
the sources, so pytest knows them before anything is built); its result is looked up in the report,
and a failure is a pytest failure showing the Java assertion, its stack trace and what the clients
logged meanwhile.

A test that asserts Kafka's behaviour and fails against odradek for a reason not fixed yet is listed in
`known-differences.toml` with the reason: it runs, and is an expected failure (strict: once it passes,
the entry must go). A test JUnit skipped on an assumption (`Assumptions.assume...`) is skipped here; any
other JUnit skip (`@Disabled`) is a failure: a difference is recorded with its reason, not switched off.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ElementTree
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.broker_process import REPO
from tests.support.java_security import JavaSecurity
from tests.support.requirements import require_executable

PROJECT = REPO / "tests" / "compat" / "java"
SOURCES = PROJECT / "src" / "test" / "java"
KNOWN_DIFFERENCES = PROJECT / "known-differences.toml"
MAVEN_REPOSITORY = REPO / ".cache" / "maven"
#: The Maven profiles of tests/compat/java/pom.xml: the newest kafka-clients 4.x, and 3.9.x.
LINES = ("kafka-4", "kafka-3.9")
#: The two kinds of target the tests run against (known-differences.toml's `targets`).
TARGETS = ("single-node", "cluster")
#: Where the tests live; `--select-package` runs every class in it.
PACKAGE = "odradek.compat"
#: Settings of the single node the suite runs against (the reference runs give Apache Kafka the same):
#: num.partitions is set (AdminTest reads it back as a static broker config); no delay before a new
#: group's first rebalance, and one partition of each internal topic: the tests wait less.
SINGLE_NODE_SETTINGS = {
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}
#: A JUnit tag on what Kafka 3.9 serves only in KRaft mode (KIP-848's consumer groups): odradek serves it
#: in ZooKeeper mode too, so the reference runs (tests/support/java_reference.py) leave it out.
NOT_IN_KAFKA_ZOOKEEPER_MODE = "not-in-kafka-zookeeper-mode"
#: A JUnit tag on the classes that SIGKILL brokers through the control channel
#: (tests/support/broker_control.py): they run after every other class, one line after the other, so no
#: other test sees the brokers die.
KILLS_BROKERS = "kills-brokers"
#: A small heap and the client JIT only: the clients wait on the brokers far more than they compute.
JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
BUILD_TIMEOUT_S = 900
RUN_TIMEOUT_S = 900


@dataclass(frozen=True, order=True)
class JavaTest:
    """One JUnit test method (a parameterized one counts once, whatever its invocations)."""

    class_name: str
    method: str

    @property
    def id(self) -> str:
        return f"{self.class_name}.{self.method}"


@dataclass(frozen=True)
class Target:
    """The brokers a run is pointed at."""

    kind: str  # one of TARGETS
    bootstrap: str
    brokers: int
    #: "odradek", or "kafka-3.9" for the reference runs (some answers differ by the versions served).
    broker: str = "odradek"
    #: The brokers' SASL_SSL and mutual-TLS listeners and the stores to reach them (SecurityTest).
    security: JavaSecurity | None = None
    #: The base URL of tests/support/broker_control.py's server for these brokers, or None (a single node):
    #: the classes tagged KILLS_BROKERS skip without it.
    control: str | None = None
    #: The broker's metrics endpoint (metrics.port), where odradek serves what clients push (KIP-714).
    metrics: str | None = None

    def system_properties(self) -> list[str]:
        """The -D options support/Target.java reads."""
        return [
            f"-Dodradek.bootstrap={self.bootstrap}",
            f"-Dodradek.brokers={self.brokers}",
            f"-Dodradek.broker={self.broker}",
            *(self.security.system_properties() if self.security is not None else []),
            *([] if self.control is None else [f"-Dodradek.control={self.control}"]),
            *([] if self.metrics is None else [f"-Dodradek.metrics={self.metrics}"]),
        ]


# ----- the tests the sources declare -------------------------------------------------------------

#: Block and line comments, left out before looking for tests (a javadoc may quote an annotation).
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_CLASS = re.compile(r"^\s*(?:public\s+|final\s+|abstract\s+)*class\s+(\w+)", re.MULTILINE)
#: A test annotation, then (other annotations and modifiers allowed) the method it marks.
_TEST_METHOD = re.compile(
    r"@(?:Test|ParameterizedTest|RepeatedTest)\b(?:\([^)]*\))?"
    r"(?:\s+@\w+(?:\([^)]*\))?)*"
    r"\s+(?:(?:public|protected|private|static|final)\s+)*void\s+(\w+)\s*\(",
)


def source_roots(line: str | None = None) -> list[Path]:
    """The test sources `line` compiles: the common tree, and `src/test/java-<line>` for tests of what
    only that line's API has (the pom adds it in the line's profile). Every root without a line."""
    if line is None:
        return [SOURCES, *sorted(p for p in SOURCES.parent.glob("java-*") if p.is_dir())]
    own = SOURCES.parent / f"java-{line}"
    return [SOURCES, own] if own.is_dir() else [SOURCES]


def test_sources(roots: Sequence[Path]) -> list[tuple[Path, Path]]:
    """(root, file) of every `*Test.java` under `roots`."""
    return [(root, path) for root in roots for path in sorted(root.rglob("*Test.java"))]


def declared_tests(line: str | None = None, roots: Sequence[Path] | None = None) -> list[JavaTest]:
    """Every test method of every `*Test.java` `line` compiles (of every line when None), or of those
    under `roots`; sorted (one class per file)."""
    found = []
    for _, path in test_sources(roots if roots is not None else source_roots(line)):
        text = _COMMENT.sub("", path.read_text())
        classes = _CLASS.findall(text)
        if not classes or classes[0] != path.stem:
            raise ValueError(f"{path}: expected a class named {path.stem}")
        found.extend(JavaTest(path.stem, method) for method in _TEST_METHOD.findall(text))
    return sorted(found)


# ----- known differences -------------------------------------------------------------------------


@dataclass(frozen=True)
class KnownDifference:
    test: str  # Class.method
    reason: str
    targets: tuple[str, ...] = TARGETS
    clients: tuple[str, ...] = LINES

    def applies(self, line: str, target: str) -> bool:
        return line in self.clients and target in self.targets


def known_differences(path: Path = KNOWN_DIFFERENCES) -> list[KnownDifference]:
    """The entries of known-differences.toml, checked: a reason each, only known lines and targets."""
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text()).get("difference", [])
    differences = []
    for entry in entries:
        unknown = set(entry) - {"test", "reason", "targets", "clients"}
        if unknown or not entry.get("test") or not str(entry.get("reason", "")).strip():
            raise ValueError(f"{path}: each [[difference]] needs test and reason (and only targets, clients)")
        difference = KnownDifference(
            test=entry["test"],
            reason=" ".join(entry["reason"].split()),
            targets=tuple(entry.get("targets", TARGETS)),
            clients=tuple(entry.get("clients", LINES)),
        )
        if not set(difference.targets) <= set(TARGETS) or not set(difference.clients) <= set(LINES):
            raise ValueError(f"{path}: {difference.test}: targets are {TARGETS}, clients {LINES}")
        differences.append(difference)
    return differences


def known_difference(
    test: JavaTest, line: str, target: str, differences: Sequence[KnownDifference]
) -> str | None:
    """The reason `test` is expected to fail with `line` against `target`, or None."""
    for difference in differences:
        if difference.test == test.id and difference.applies(line, target):
            return difference.reason
    return None


def pytest_params(target: str) -> list[object]:
    """(line, test) for every line and declared test, each known difference marked a strict xfail."""
    differences = known_differences()
    params: list[object] = []
    for line in LINES:
        for test in declared_tests(line):
            reason = known_difference(test, line, target, differences)
            marks = [pytest.mark.xfail(reason=f"known difference: {reason}", strict=True)] if reason else []
            params.append(pytest.param(line, test, id=f"{line}-{test.id}", marks=marks))
    return params


# ----- building ----------------------------------------------------------------------------------


def build(line: str) -> str:
    """The class path to run `line`'s tests with, building them first if a source is newer than the build.

    Under a file lock: several pytest workers may ask at once. A rebuild starts from an empty
    `target/<line>/`, so the class of a deleted test never runs again.
    """
    mvn = require_executable("mvn")
    require_executable("java")
    out = PROJECT / "target" / line
    stamp = out / "classpath.txt"
    MAVEN_REPOSITORY.mkdir(parents=True, exist_ok=True)
    with locked(MAVEN_REPOSITORY.parent / "java-compat.lock"):
        if not stamp.exists() or stamp.stat().st_mtime < _newest_input():
            shutil.rmtree(out, ignore_errors=True)
            command = [
                mvn,
                "-q",
                "-B",
                f"-Dmaven.repo.local={MAVEN_REPOSITORY}",
                "-P",
                line,
                "test-compile",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={stamp}",
                "-Dmdep.includeScope=test",
            ]
            built = subprocess.run(
                command, cwd=PROJECT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False
            )
            if built.returncode != 0 or not stamp.exists():
                shutil.rmtree(out, ignore_errors=True)
                pytest.fail(
                    f"the Java suite did not build for {line} ({' '.join(command)}):\n"
                    f"{built.stdout[-8000:]}{built.stderr[-8000:]}",
                    pytrace=False,
                )
        return os.pathsep.join([str(out / "test-classes"), stamp.read_text().strip()])


def _newest_input() -> float:
    inputs = [PROJECT / "pom.xml", *(p for p in (PROJECT / "src").rglob("*") if p.is_file())]
    return max(p.stat().st_mtime for p in inputs)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# ----- running -----------------------------------------------------------------------------------


@dataclass
class Invocation:
    """One execution of a test method: a plain test has one, a parameterized test one per argument."""

    name: str  # JUnit's display name: "acksZeroDeliversWithoutAnOffset()", "[3] snappy"
    status: str  # passed, failed, skipped, aborted (an assumption did not hold)
    message: str = ""
    detail: str = ""  # the stack trace, then what the test printed (the clients' warnings)


@dataclass
class Report:
    line: str
    target: Target
    invocations: dict[JavaTest, list[Invocation]] = field(default_factory=dict)
    #: The launcher's own output (its summary; a JVM that died says why here).
    output: str = ""

    def check(self, test: JavaTest) -> None:
        """Pass, or fail/skip `test` as JUnit ran it."""
        ran = self.invocations.get(test)
        where = f"{test.id} with kafka-clients {self.line} against the {self.target.kind}"
        if not ran:
            pytest.fail(
                f"JUnit did not report {where}; the launcher said:\n{self.output[-6000:]}", pytrace=False
            )
        failed = [i for i in ran if i.status == "failed"]
        disabled = [i for i in ran if i.status == "skipped"]
        if failed:
            pytest.fail(
                f"{where} failed in JUnit:\n" + "\n".join(_describe(i) for i in failed), pytrace=False
            )
        if disabled:
            pytest.fail(
                f"{where} was skipped in JUnit ({disabled[0].message}): a test that cannot pass yet is "
                "listed in tests/compat/java/known-differences.toml with its reason, not disabled",
                pytrace=False,
            )
        if all(i.status == "aborted" for i in ran):
            pytest.skip(f"{where}: {ran[0].message}")

    def merge(self, other: Report) -> None:
        """Add a second run's results (the classes that kill brokers) to this one's."""
        self.invocations.update(other.invocations)
        self.output += "\n" + other.output

    def undeclared(self, declared: Sequence[JavaTest]) -> list[str]:
        """What JUnit ran that `declared` (`declared_tests(line)`) lacks: no pytest test reports it."""
        return sorted(t.id for t in self.invocations if t not in set(declared))


def _describe(invocation: Invocation) -> str:
    return f"--- {invocation.name}: {invocation.message}\n{invocation.detail}"


class Run:
    """One JVM running every test class of one line against one target."""

    def __init__(
        self,
        line: str,
        target: Target,
        work_dir: Path,
        classpath: str,
        extra: Sequence[str] = (),
        only: Collection[JavaTest] | None = None,
        name: str = "",
    ) -> None:
        """`name`: a suffix for the report and log of a second run of the same line and target."""
        self.line = line
        self.target = target
        self.reports = work_dir / f"junit-{line}-{target.kind}{name}"
        self.reports.mkdir(parents=True, exist_ok=True)
        self.log_path = work_dir / f"junit-{line}-{target.kind}{name}.log"
        java = require_executable("java")
        command = [
            java,
            *JVM_OPTIONS,
            *target.system_properties(),
            "-cp",
            classpath,
            "org.junit.platform.console.ConsoleLauncher",
            "execute",
            "--disable-banner",
            "--disable-ansi-colors",
            "--details=summary",
            *_selectors(only),
            f"--reports-dir={self.reports}",
            # what a test prints (the clients log warnings to stderr) goes into its entry of the report
            "--config=junit.platform.output.capture.stdout=true",
            "--config=junit.platform.output.capture.stderr=true",
            *extra,
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=PROJECT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def wait(self) -> Report:
        try:
            self.process.wait(RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        output = self.log_path.read_text(errors="replace")
        report = Report(self.line, self.target, output=output)
        xml_path = self.reports / "TEST-junit-jupiter.xml"
        if xml_path.exists():
            report.invocations = parse_report(xml_path.read_text(errors="replace"))
        return report

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _selectors(only: Collection[JavaTest] | None) -> list[str]:
    """The launcher's selection: every class of the package, or just `only` (pytest -k picked them).

    `only` is selected as its classes filtered by method name: --select-method=Class#method finds no
    method that takes parameters (a @ParameterizedTest), and one selector JUnit cannot resolve fails the
    whole run's discovery. The filter matches the method's fully qualified name, `Class#method`, with or
    without its parameter types (JUnit 1.14 leaves them out; the pattern must match the whole name)."""
    if only is None:
        return [f"--select-package={PACKAGE}"]
    qualified = {path.stem: _qualified(root, path) for root, path in test_sources(source_roots())}
    classes = sorted({qualified[test.class_name] for test in only})
    return [f"--select-class={name}" for name in classes] + [
        f"--include-methodname={re.escape(qualified[test.class_name] + '#' + test.method)}(\\(.*\\))?"
        for test in sorted(only)
    ]


def _qualified(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def selected_tests(request: pytest.FixtureRequest) -> tuple[list[str], list[JavaTest] | None]:
    """The lines and Java tests this run of `request`'s module needs: those its selected pytest tests
    (pytest -k, a node id) name; None for the tests when every declared one is selected."""
    lines: set[str] = set()
    tests: set[JavaTest] = set()
    for item in request.session.items:
        params = getattr(item, "callspec", None)
        if item.module is not request.module or params is None:
            continue
        lines.add(params.params["line"])
        if isinstance(params.params.get("test"), JavaTest):
            tests.add(params.params["test"])
    chosen = [line for line in LINES if line in lines]
    every = set(declared_tests())
    return chosen, (None if tests >= every or not tests else sorted(tests))


def parse_report(xml: str) -> dict[JavaTest, list[Invocation]]:
    """JUnit's legacy XML report, by test method (a testcase's name is `method(params)` or, for an
    invocation of a parameterized test, `method(params)[n]`)."""
    found: dict[JavaTest, list[Invocation]] = {}
    for case in ElementTree.fromstring(xml).iter("testcase"):
        class_name = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "")
        test = JavaTest(class_name, name.split("(", 1)[0])
        found.setdefault(test, []).append(_invocation(case, name))
    return found


def _invocation(case: ElementTree.Element, name: str) -> Invocation:
    out = "".join(e.text or "" for e in case.iter("system-out"))
    err = "".join(e.text or "" for e in case.iter("system-err"))
    display = re.search(r"^display-name: (.*)$", out, re.MULTILINE)
    shown = display.group(1) if display is not None else name
    captured = _captured(out) + err
    for kind in ("failure", "error"):
        problem = case.find(kind)
        if problem is not None:
            detail = _without_framework_frames((problem.text or "").strip())
            if captured.strip():
                detail += "\n--- the test's output:\n" + captured.strip()[-6000:]
            return Invocation(shown, "failed", problem.get("message", ""), detail)
    skipped = case.find("skipped")
    if skipped is not None:
        text = (skipped.text or "") + skipped.get("message", "")
        status = "aborted" if "TestAbortedException" in text else "skipped"
        return Invocation(shown, status, skipped.get("message", "") or text.strip().splitlines()[0])
    return Invocation(shown, "passed")


#: Stack frames of JUnit and of the JDK's reflection and streams, below every test method: noise.
_FRAMEWORK_FRAME = re.compile(
    r"^\s+at (?:org\.junit\.|java\.base/java\.(?:lang\.reflect\.|util\.(?:stream\.|Spliterators"
    r"|ArrayList\.forEach|Optional\.ifPresent)))"
)


def _without_framework_frames(trace: str) -> str:
    return "\n".join(line for line in trace.splitlines() if not _FRAMEWORK_FRAME.match(line))


def _captured(system_out: str) -> str:
    """What the test printed: the report's system-out less its unique-id/display-name header."""
    lines = [
        line for line in system_out.splitlines() if not line.startswith(("unique-id: ", "display-name: "))
    ]
    return "\n".join(lines)


def run_lines(
    target: Target,
    work_dir: Path,
    lines: Sequence[str] = LINES,
    extra: Sequence[str] = (),
    only: Collection[JavaTest] | None = None,
) -> Mapping[str, Report]:
    """Build every line, then run them against `target` at the same time (one JVM each: the clients
    mostly wait on the brokers, so two runs side by side take little longer than one).

    With a control channel, the classes tagged KILLS_BROKERS run afterwards, one line after the other in
    a JVM of its own: a broker they kill must not fail another class's test, of either line.
    """
    classpaths = {line: build(line) for line in lines}
    chosen = {
        line: None if only is None else [t for t in only if t in set(declared_tests(line))] for line in lines
    }
    if target.control is None:
        return _run_together(target, work_dir, classpaths, chosen, extra)
    killers = tagged_classes(KILLS_BROKERS)
    reports = _run_together(target, work_dir, classpaths, chosen, [*extra, f"--exclude-tag={KILLS_BROKERS}"])
    for line in lines:
        picked = chosen[line]
        if picked is not None and not any(t.class_name in killers for t in picked):
            continue
        run = Run(
            line,
            target,
            work_dir,
            classpaths[line],
            [*extra, f"--include-tag={KILLS_BROKERS}"],
            picked,
            name="-kills",
        )
        try:
            reports[line].merge(run.wait())
        finally:
            run.stop()
    return reports


def _run_together(
    target: Target,
    work_dir: Path,
    classpaths: Mapping[str, str],
    chosen: Mapping[str, list[JavaTest] | None],
    extra: Sequence[str],
) -> dict[str, Report]:
    runs = []
    try:
        for line, classpath in classpaths.items():
            runs.append(Run(line, target, work_dir, classpath, extra, chosen[line]))
        return {run.line: run.wait() for run in runs}
    finally:
        for run in runs:
            run.stop()


def tagged_classes(tag: str) -> set[str]:
    """The test classes (of any line) annotated `@Tag(Target.<TAG>)`."""
    annotation = f"@Tag(Target.{tag.upper().replace('-', '_')})"
    return {path.stem for _, path in test_sources(source_roots()) if annotation in path.read_text()}


def main() -> int:
    """`make java-compat`: build every line (as the tests would on first use)."""
    for line in LINES:
        try:
            build(line)
        except (pytest.skip.Exception, pytest.fail.Exception) as error:
            print(error, file=sys.stderr)
            return 1
        print(f"{line}: {PROJECT / 'target' / line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
