"""The Java suite (tests/compat/java) against Apache Kafka 3.9 itself, in ZooKeeper mode: the check of the
suite, not of odradek. A Java test asserts what Kafka 3.9 does, so before it counts as a test of odradek
it must pass here, against one broker and against three.

    make java-compat-reference                              # both lines, one broker then three
    .venv/bin/python -m tests.support.java_reference --brokers 3 --line kafka-4 [--keep DIR]
    .venv/bin/python -m tests.support.java_reference --brokers 3 --class PartitionerTest  # only these classes
    .venv/bin/python -m tests.support.java_reference --kraft [--class ShareConsumerTest]   # Kafka 4.x, KRaft

Kafka's broker (`kafka_2.13`, tests/compat/java/reference-broker/pom.xml) is resolved into .cache/maven
like the clients; ZooKeeper is Debian's, as for the cluster tests. The brokers get the settings the
odradek targets have (java_suite.SINGLE_NODE_SETTINGS; tests/support/txn_cluster.py for three) and
listen on 127.0.0.2-4 for three, as odradek's cluster does. Classes tagged
`not-in-kafka-zookeeper-mode` (KIP-848's consumer groups, which Kafka 3.9 serves only in KRaft mode)
are left out. With three brokers the tests that kill brokers get the control channel of
tests/support/broker_control.py (a SIGKILL, a start on the same data). Exits 0 only when every test
ran and passed.

`--kraft` runs the classes Kafka 3.9 serves only in KRaft mode or not at all (tagged
`not-in-kafka-zookeeper-mode`: KIP-848's groups, and what only a 4.x broker has, such as share groups)
against Apache Kafka 4.x in KRaft mode instead (tests/support/kafka_kraft_reference.py), with the 4.x
client line unless `--line` says otherwise, with the same secured listeners (in KRaft's terms: its
`StandardAuthorizer`, the PLAINTEXT principal a super user).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import java_suite
from tests.support.broker_control import BrokerControl, serving
from tests.support.java_security import JavaSecurity
from tests.support.kafka_kraft_reference import KafkaKRaftBrokers
from tests.support.kafka_reference import KafkaBrokers, broker_host
from tests.support.zookeeper import ZooKeeperServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--brokers", type=int, choices=(1, 3), action="append", help="default: 1, then 3")
    parser.add_argument("--line", choices=java_suite.LINES, action="append", help="default: every line")
    parser.add_argument("--keep", type=Path, help="keep the brokers' data and logs and the reports here")
    parser.add_argument("--class", dest="classes", action="append", help="run only this test class")
    parser.add_argument("--kraft", action="store_true", help="against Kafka 4.x in KRaft mode (see above)")
    args = parser.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="java-reference-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        failures = 0
        for brokers in args.brokers or [1, 3]:
            if args.kraft:
                kraft_only = java_suite.tagged_classes(java_suite.NOT_IN_KAFKA_ZOOKEEPER_MODE)
                classes = args.classes or sorted(kraft_only)
                failures += _run_against_kraft(
                    brokers, args.line or ["kafka-4"], work / f"kafka-kraft-{brokers}", classes
                )
                continue
            failures += _run_against_kafka(
                brokers, args.line or list(java_suite.LINES), work / f"kafka-{brokers}", args.classes
            )
        print("every test passed against Apache Kafka" if not failures else f"{failures} failed", flush=True)
        return 0 if failures == 0 else 1
    except (pytest.skip.Exception, pytest.fail.Exception) as error:  # a missing tool, a failed build
        print(error, file=sys.stderr)
        return 1
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _run_against_kafka(brokers: int, lines: list[str], work: Path, classes: list[str] | None) -> int:
    work.mkdir(parents=True, exist_ok=True)
    only = None if not classes else [t for t in java_suite.declared_tests() if t.class_name in classes]
    zookeeper = ZooKeeperServer(work).start()
    hosts = {node: broker_host(node, brokers) for node in range(1, brokers + 1)}
    security = JavaSecurity(work / "security", hosts)  # the secured listeners odradek's targets have
    kafka = KafkaBrokers(brokers, work, zookeeper, node_settings=security.broker_settings)
    try:
        kafka.start()
        kind = "single-node" if brokers == 1 else "cluster"
        print(f"Apache Kafka, {brokers} broker(s) at {kafka.bootstrap}", flush=True)
        extra = [f"--exclude-tag={java_suite.NOT_IN_KAFKA_ZOOKEEPER_MODE}"]
        if brokers == 1:  # nothing to kill: the classes that kill brokers skip, as on odradek's single node
            target = java_suite.Target(kind, kafka.bootstrap, brokers, broker="kafka-3.9", security=security)
            reports = java_suite.run_lines(target, work, lines, extra=extra, only=only)
        else:
            control = BrokerControl(kafka.addresses, kafka.kill_broker, kafka.start_broker)
            with serving(control) as url:
                target = java_suite.Target(
                    kind, kafka.bootstrap, brokers, broker="kafka-3.9", security=security, control=url
                )
                reports = java_suite.run_lines(target, work, lines, extra=extra, only=only)
            print(f"broker steps taken: {control.done}", flush=True)
        return sum(_print_outcomes(report, only) for report in reports.values())
    finally:
        kafka.stop()
        zookeeper.stop()


def _run_against_kraft(brokers: int, lines: list[str], work: Path, classes: list[str]) -> int:
    work.mkdir(parents=True, exist_ok=True)
    only = [t for t in java_suite.declared_tests() if t.class_name in classes]
    hosts = {node: broker_host(node, brokers) for node in range(1, brokers + 1)}
    security = JavaSecurity(work / "security", hosts)  # the secured listeners odradek's targets have

    def secured(node: int, port: int) -> dict[str, str]:
        """The secured listeners and ACLs of odradek's targets, with KRaft's authorizer (the ZooKeeper
        one cannot run there); KafkaKRaftBrokers adds the quorum's listener."""
        settings = security.broker_settings(node, port)
        settings["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        return settings

    kafka = KafkaKRaftBrokers(brokers, work, node_settings=secured)
    try:
        kafka.start()
        kind = "single-node" if brokers == 1 else "cluster"
        print(f"Apache Kafka (KRaft), {brokers} node(s) at {kafka.bootstrap}", flush=True)
        if brokers == 1:
            target = java_suite.Target(kind, kafka.bootstrap, brokers, broker="kafka-4", security=security)
            reports = java_suite.run_lines(target, work, lines, only=only)
        else:
            control = BrokerControl(kafka.addresses, kafka.kill_broker, kafka.start_broker)
            with serving(control) as url:
                target = java_suite.Target(
                    kind, kafka.bootstrap, brokers, broker="kafka-4", security=security, control=url
                )
                reports = java_suite.run_lines(target, work, lines, only=only)
            print(f"broker steps taken: {control.done}", flush=True)
        return sum(_print_outcomes(report, only) for report in reports.values())
    finally:
        kafka.stop()


def _print_outcomes(report: java_suite.Report, only: list[java_suite.JavaTest] | None) -> int:
    """One line per test (of `only`, when given); the failures in full. Returns how many failed (or
    were not reported)."""
    failed = 0
    for test in java_suite.declared_tests(report.line):
        if only is not None and test not in only:
            continue
        try:
            report.check(test)
            outcome = "passed"
        except pytest.skip.Exception as skipped:
            outcome = f"skipped: {skipped}"
        except pytest.fail.Exception as failure:
            excluded = java_suite.tagged_classes(java_suite.NOT_IN_KAFKA_ZOOKEEPER_MODE)
            if test.class_name in excluded and test not in report.invocations:
                continue  # left out on purpose (not-in-kafka-zookeeper-mode)
            failed += 1
            outcome = f"FAILED\n{failure}"
        print(f"[{report.line} vs Kafka {report.target.kind}] {test.id}: {outcome}", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(main())
