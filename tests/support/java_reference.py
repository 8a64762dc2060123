"""The Java suite (tests/compat/java) against Apache Kafka 3.9 itself, in ZooKeeper mode: the check of the
suite, not of odradek. A Java test asserts what Kafka 3.9 does, so before it counts as a test of odradek
it must pass here, against one broker and against three.

    make java-compat-reference                              # both lines, one broker then three
    .venv/bin/python -m tests.support.java_reference --brokers 3 --line kafka-4 [--keep DIR]

Kafka's broker (`kafka_2.13`, tests/compat/java/reference-broker/pom.xml) is resolved into .cache/maven
like the clients; ZooKeeper is Debian's, as for the cluster tests. The brokers get the settings the
odradek targets have (java_suite.SINGLE_NODE_SETTINGS; tests/support/txn_cluster.py for three) and
listen on 127.0.0.2-4 for three, as odradek's cluster does. Classes tagged
`not-in-kafka-zookeeper-mode` (KIP-848's consumer groups, which Kafka 3.9 serves only in KRaft mode)
are left out. Exits 0 only when every test ran and passed.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support import java_suite
from tests.support.broker_process import _die_with_parent
from tests.support.ports import free_port
from tests.support.requirements import require_executable
from tests.support.zookeeper import ZooKeeperServer

REFERENCE_PROJECT = java_suite.PROJECT / "reference-broker"
CLASSPATH = java_suite.PROJECT / "target" / "reference-broker" / "classpath.txt"
KAFKA_JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC")
LOG4J = "log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n" + (
    "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", type=int, choices=(1, 3), action="append", help="default: 1, then 3")
    parser.add_argument("--line", choices=java_suite.LINES, action="append", help="default: every line")
    parser.add_argument("--keep", type=Path, help="keep the brokers' data and logs and the reports here")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="java-reference-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        failures = 0
        for brokers in args.brokers or [1, 3]:
            failures += _run_against_kafka(
                brokers, args.line or list(java_suite.LINES), work / f"kafka-{brokers}"
            )
        print("every test passed against Apache Kafka" if not failures else f"{failures} failed", flush=True)
        return 0 if failures == 0 else 1
    except (pytest.skip.Exception, pytest.fail.Exception) as error:  # a missing tool, a failed build
        print(error, file=sys.stderr)
        return 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _run_against_kafka(brokers: int, lines: list[str], work: Path) -> int:
    classpath = _reference_classpath()
    work.mkdir(parents=True, exist_ok=True)
    zookeeper = ZooKeeperServer(work).start()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        addresses = []
        for node in range(1, brokers + 1):
            host = "127.0.0.1" if brokers == 1 else f"127.0.0.{node + 1}"
            address = (host, free_port())
            processes.append(_start_broker(node, address, brokers, zookeeper, classpath, work))
            addresses.append(address)
        for address in addresses:
            _wait_listening(address, processes)
        bootstrap = ",".join(f"{host}:{port}" for host, port in addresses)
        kind = "single-node" if brokers == 1 else "cluster"
        target = java_suite.Target(kind, bootstrap, brokers, broker="kafka-3.9")
        print(f"Apache Kafka, {brokers} broker(s) at {bootstrap}", flush=True)
        reports = java_suite.run_lines(
            target, work, lines, extra=[f"--exclude-tag={java_suite.NOT_IN_KAFKA_ZOOKEEPER_MODE}"]
        )
        return sum(_print_outcomes(report) for report in reports.values())
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        zookeeper.stop()


def _reference_classpath() -> str:
    """kafka_2.13's class path, resolved on first use."""
    if not CLASSPATH.exists():
        mvn = require_executable("mvn")
        subprocess.run(
            [
                mvn,
                "-q",
                "-B",
                f"-Dmaven.repo.local={java_suite.MAVEN_REPOSITORY}",
                "dependency:build-classpath",
                f"-Dmdep.outputFile={CLASSPATH}",
            ],
            cwd=REFERENCE_PROJECT,
            check=True,
            timeout=java_suite.BUILD_TIMEOUT_S,
        )
    return CLASSPATH.read_text().strip()


def _start_broker(
    node: int,
    address: tuple[str, int],
    brokers: int,
    zookeeper: ZooKeeperServer,
    classpath: str,
    work: Path,
) -> subprocess.Popen[bytes]:
    replication = min(brokers, 3)
    settings = {
        **java_suite.SINGLE_NODE_SETTINGS,
        "broker.id": str(node),
        "listeners": f"PLAINTEXT://{address[0]}:{address[1]}",
        "log.dirs": str(work / f"data-{node}"),
        "zookeeper.connect": f"{zookeeper.connect_string}/kafka",
        "zookeeper.session.timeout.ms": "6000",
        "offsets.topic.replication.factor": str(replication),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min(replication, 2)),
        "auto.leader.rebalance.enable": "false",
    }
    if brokers > 1:  # as tests/support/txn_cluster.py
        settings |= {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}
    config = work / f"server-{node}.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    log4j = work / "log4j.properties"
    log4j.write_text(LOG4J)
    java = require_executable("java")
    main = ["kafka.Kafka", str(config)]
    with open(work / f"kafka-{node}.log", "ab") as log:
        return subprocess.Popen(
            [java, *KAFKA_JVM_OPTIONS, f"-Dlog4j.configuration={log4j.as_uri()}", "-cp", classpath, *main],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )


def _wait_listening(address: tuple[str, int], processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in processes):
            raise RuntimeError("an Apache Kafka broker exited at start-up (see its kafka-N.log; --keep)")
        try:
            with socket.create_connection(address, timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"Apache Kafka did not listen on {address} within 120 s")


def _print_outcomes(report: java_suite.Report) -> int:
    """One line per test; the failures in full. Returns how many failed (or were not reported)."""
    failed = 0
    for test in java_suite.declared_tests(report.line):
        try:
            report.check(test)
            outcome = "passed"
        except pytest.skip.Exception as skipped:
            outcome = f"skipped: {skipped}"
        except pytest.fail.Exception as failure:
            if test.class_name in _excluded_classes() and test not in report.invocations:
                continue  # left out on purpose (not-in-kafka-zookeeper-mode)
            failed += 1
            outcome = f"FAILED\n{failure}"
        print(f"[{report.line} vs Kafka {report.target.kind}] {test.id}: {outcome}", flush=True)
    return failed


def _excluded_classes() -> set[str]:
    tag = f"@Tag(Target.{java_suite.NOT_IN_KAFKA_ZOOKEEPER_MODE.upper().replace('-', '_')})"
    return {p.stem for _, p in java_suite.test_sources(java_suite.source_roots()) if tag in p.read_text()}


if __name__ == "__main__":
    sys.exit(main())
