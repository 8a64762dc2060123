"""docs/compatibility.md's client table (tools/write_compatibility.py writes the file).

The Java rows come from the Java suite itself: the kafka-clients versions its pom pins, its test classes
(tests/support/java_suite.py reads them from the sources, as pytest does) and its known differences
(tests/compat/java/known-differences.toml); Kafka Streams' row, from the version its application's pom
pins (tests/compat/streams/pom.xml); Kafka Connect's, from tests/compat/connect/pom.xml. The Python
clients' versions are the requirements in pyproject.toml; what their tests cover is said in CLIENT_TESTS
below.
"""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

from tests.support import java_suite, kafka_tools, kafka_tools_reference, spark_kafka_jars
from tests.support.tool_scenarios import SCENARIOS

REPO = Path(__file__).resolve().parents[1]
POM_NAMESPACE = {"m": "http://maven.apache.org/POM/4.0.0"}

HEAD = """\
## Clients

Each client the test suite runs against odradek, against a single node and against the 3-broker
ZooKeeper cluster (RF=3), in `make test`. **Known differences** are what Apache Kafka 3.9 does that a
client's tests find odradek does not do yet, with the reason; a difference found and fixed is not
listed (its regression test is in `tests/regressions`). The Java rows are written from the Java suite
(`tests/compat/java`, docs/testing.md), whose every test also passes against Apache Kafka 3.9.2 in
ZooKeeper mode (`make java-compat-reference`), except KIP-848's consumer groups, which Kafka 3.9 serves
only in KRaft mode. The rows of Kafka's command-line tools are written from `tests/compat/kafka_tools`:
its scenarios, each printing against odradek what it prints against Apache Kafka 3.9.2
(`make kafka-tools-reference` records that); `make test` runs the 4.x tools against both targets, the
3.9 tools against the single node.
"""

#: What a client line sees of odradek that differs from Apache Kafka 3.9 on purpose (not a failing test).
BY_DESIGN = {
    "kafka-4": "by design: odradek serves the newer versions Kafka 4.x added to some APIs, and a 4.x client "
    "uses them, so it sees Kafka 4.x's answers there: `describeConsumerGroups` of a group that does not "
    "exist throws `GroupIdNotFoundException` (DescribeGroups v6, KIP-1043) where Kafka 3.9 describes it "
    "as Dead (`AdminGroupsTest`)",
}

#: Kafka Streams: what its test runs (tests/compat/streams, tests/support/streams_scenario.py), and what
#: it finds differing from Kafka 3.9.
STREAMS_POM = REPO / "tests" / "compat" / "streams" / "pom.xml"
STREAMS_TESTED = (
    "on the 3-broker cluster only: an application with `processing.guarantee=exactly_once_v2` (a "
    "windowed count behind a repartition, a windowed state store, changelog and repartition topics at "
    "RF=3), two instances; the group's coordinator broker SIGKILLed and restarted, then an instance "
    "SIGKILLed and restarted, mid-run; the output read `read_committed` holds each window's counts "
    "1..n once each (`tests/compat/streams`; the same run passes against Apache Kafka 3.9.2)"
)
STREAMS_DIFFERENCES = "none"

#: Kafka Connect: what its test runs (tests/compat/connect, tests/support/connect_scenario.py).
CONNECT_POM = REPO / "tests" / "compat" / "connect" / "pom.xml"
CONNECT_TESTED = (
    "on the 3-broker cluster only: two distributed workers (`ConnectDistributed`), their config, offset "
    "and status topics compacted at RF=3, running the FileStreamSource and FileStreamSink connectors "
    "(file → topic → file); the worker running the source task SIGKILLed and restarted mid-run while "
    "lines are appended, then the one running the sink task; the sink's file holds every input line, a "
    "line repeated only if it was in the input before the last kill (at least once, as Connect promises "
    "for these connectors) "
    "(`tests/compat/connect`; the same run passes against Apache Kafka 3.9.2). 4.1.2, not 4.4.0: "
    "`connect-file` resolves at no newer version here"
)
CONNECT_DIFFERENCES = "none"

#: The Python clients and kcat: the requirement they are installed by, and where their tests are.
CLIENT_TESTS = (
    (
        "confluent-kafka (librdkafka)",
        "confluent-kafka",
        "produce and fetch with every codec (`tests/compat/test_confluent_interop.py`), the admin client and "
        "ACLs (`tests/compat/admin`), consumer groups (`tests/compat/groups`), transactions and an "
        "exactly-once copy (`tests/compat/transactions`), SASL and TLS (`tests/compat/security`), leader "
        "kills and controlled shutdowns on the cluster (`tests/integration/cluster`)",
    ),
    (
        "kafka-python",
        "kafka-python",
        "produce and fetch (`tests/compat/test_kafka_python_interop.py`), the admin client, consumer "
        "groups, transactions, SASL, replication on the cluster (`tests/integration/cluster`)",
    ),
    (
        "aiokafka",
        "aiokafka",
        "produce and fetch (`tests/compat/test_aiokafka_interop.py`), the admin client, cooperative groups, "
        "transactions, security, a leader kill on the cluster",
    ),
    (
        "kcat",
        None,
        "produce and consume, groups, TLS and SASL (`tests/compat/test_kcat_interop.py`, "
        "`tests/compat/security`), a leader kill on the cluster",
    ),
)


#: Spark's own Kafka connector (tests/spark/kafka-connector/pom.xml pins it; its jars hold the Java client).
SPARK_CONNECTOR_TESTS = (
    '`spark.read`/`readStream.format("kafka")` and `.write`/`writeStream.format("kafka")`, batch and '
    "streaming, exact rows: every column, `includeHeaders`, `startingOffsetsByTimestamp` and "
    "`endingOffsetsByTimestamp`, `kafka.group.id` across a restart from a checkpoint, the `partition` and "
    "`headers` columns written (`tests/spark/test_kafka_connector.py`); SCRAM-SHA-512 over SASL_PLAINTEXT "
    "through `kafka.sasl.jaas.config`, a wrong password refused (`test_kafka_connector_secured.py`); an "
    "acks=all write and batch and streaming reads on the cluster (`test_kafka_connector_cluster.py`); "
    "`odradek pipeline --connector kafka` (`test_pipeline.py`)"
)


def clients_section() -> str:
    lines = [
        HEAD,
        "| client | version (pinned, or required) | tested | known differences |",
        "| --- | --- | --- | --- |",
    ]
    versions = _java_versions()
    differences = java_suite.known_differences()
    for line in java_suite.LINES:
        client = f"Apache Kafka's Java client (`kafka-clients`, `{line}`)"
        lines.append(
            f"| {client} | {versions[line]} | {_java_tests(line)} | {_differences(line, differences)} |"
        )
    tool_versions = _versions(kafka_tools.PROJECT / "pom.xml", kafka_tools.LINES)
    tool_differences = java_suite.known_differences(kafka_tools_reference.KNOWN_DIFFERENCES)
    for line in kafka_tools.LINES:
        tools = f"Apache Kafka's command-line tools (`kafka-tools`, `kafka_2.13`, `{line}`)"
        lines.append(
            f"| {tools} | {tool_versions[line]} | {_tool_scenarios(line)} "
            f"| {_differences(line, tool_differences, by_design=False)} |"
        )
    lines.append(
        f"| Kafka Streams (`kafka-streams`) | {_pom_property(STREAMS_POM, 'kafka.version')} | "
        f"{STREAMS_TESTED} | {STREAMS_DIFFERENCES} |"
    )
    lines.append(
        "| Kafka Connect (`connect-runtime`, `connect-file`) | "
        f"{_pom_property(CONNECT_POM, 'kafka.version')} | {CONNECT_TESTED} | {CONNECT_DIFFERENCES} |"
    )
    requirements = _python_requirements()
    lines.append(
        "| Spark's Kafka connector (`spark-sql-kafka-0-10_2.13`, with kafka-clients "
        f"{spark_kafka_jars.kafka_clients_version()}) | {spark_kafka_jars.connector_version()}, on "
        f"{requirements['pyspark']} (Maven Central served no connector at PySpark 4.3.0 when this was "
        f"pinned: the suite runs it on 4.3.0) | {SPARK_CONNECTOR_TESTS} | none |"
    )
    for name, package, tested in CLIENT_TESTS:
        version = requirements[package] if package else "Debian's `kcat` package"
        lines.append(f"| {name} | {version} | {tested} | not yet collected here |")
    lines.append("")
    return "\n".join(lines)


def _java_tests(line: str) -> str:
    by_class = Counter(test.class_name for test in java_suite.declared_tests(line))
    classes = ", ".join(f"`{name}` ({count})" for name, count in sorted(by_class.items()))
    return f"the Java suite's tests by class: {classes}"


def _tool_scenarios(line: str) -> str:
    names = ", ".join(f"`{s.name}`" for s in SCENARIOS.values() if line in s.lines)
    return f"the tool scenarios (`tests/support/tool_scenarios`): {names}"


def _differences(line: str, differences: list[java_suite.KnownDifference], by_design: bool = True) -> str:
    found = [
        f"`{d.test}` ({', '.join(t for t in java_suite.TARGETS if t in d.targets)}): {d.reason.rstrip('.')}"
        for d in differences
        if line in d.clients
    ]
    if by_design and line in BY_DESIGN:
        found.append(BY_DESIGN[line])
    return "; ".join(found) if found else "none"


def _java_versions() -> dict[str, str]:
    """Each Maven profile's kafka.version in tests/compat/java/pom.xml."""
    return _versions(java_suite.PROJECT / "pom.xml", java_suite.LINES)


def _versions(pom: Path, lines: tuple[str, ...]) -> dict[str, str]:
    """Each Maven profile's kafka.version in `pom`, by its kafka.line."""
    root = ElementTree.parse(pom).getroot()
    versions = {}
    for profile in root.iterfind("m:profiles/m:profile", POM_NAMESPACE):
        line = profile.findtext("m:properties/m:kafka.line", namespaces=POM_NAMESPACE)
        version = profile.findtext("m:properties/m:kafka.version", namespaces=POM_NAMESPACE)
        if line and version:
            versions[line] = version
    missing = set(lines) - set(versions)
    if missing:
        raise ValueError(f"{pom} has no profile for {sorted(missing)}")
    return versions


def _pom_property(pom: Path, name: str) -> str:
    root = ElementTree.parse(pom).getroot()
    value = root.findtext(f"m:properties/m:{name}", namespaces=POM_NAMESPACE)
    if not value:
        raise ValueError(f"{pom} has no property {name}")
    return value


def _python_requirements() -> dict[str, str]:
    """The dev extra's requirement of each package, as pyproject.toml writes it (`kafka-python==3.0.12`)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found = {}
    for requirement in project["optional-dependencies"]["dev"]:
        name = re.split(r"[<>=!~ \[]", requirement, maxsplit=1)[0]
        found[name] = f"`{requirement}`"
    return found
