"""kafka-topics: create, list, describe, alter, delete, and the errors a user meets on the way."""

from __future__ import annotations

from tests.support.tool_scenarios.metadata import wait_gone, wait_topic
from tests.support.tool_scenarios.session import Session, scenario

B = "--bootstrap-server"


def create(session: Session, topic: str, partitions: int, *extra: str, record: bool = True) -> None:
    """Create `topic` with a fixed replica assignment on a cluster (Kafka's own is random), then wait
    until every broker knows it."""
    if session.cluster:
        nodes = sorted(session.target.addresses)
        assignment = ",".join(
            ":".join(str(nodes[(p + r) % len(nodes)]) for r in range(len(nodes))) for p in range(partitions)
        )
        placement = ["--replica-assignment", assignment]
    else:
        placement = ["--partitions", str(partitions), "--replication-factor", "1"]
    args = (B, "{bootstrap}", "--create", "--topic", topic, *placement, *extra)
    if record:
        session.run("kafka-topics", *args)
    else:
        session.quiet("kafka-topics", *args)
    wait_topic(session, topic, partitions)


@scenario()
def topics(session: Session) -> None:
    create(
        session, "tools-orders", 3, "--config", "retention.ms=3600000", "--config", "cleanup.policy=compact"
    )
    session.run("kafka-topics", B, "{bootstrap}", "--create", "--topic", "tools-orders", "--partitions", "1")
    session.run(
        "kafka-topics", B, "{bootstrap}", "--create", "--if-not-exists", "--topic", "tools-orders",
        "--partitions", "1",
    )  # fmt: skip
    create(session, "tools-payments", 1)
    session.run("kafka-topics", B, "{bootstrap}", "--list", "--topic", "tools-.*")
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-orders")
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-.*", "--exclude-internal")
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-missing")
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--if-exists", "--topic", "tools-missing")

    alter = ["--alter", "--topic", "tools-payments", "--partitions"]
    session.run("kafka-topics", B, "{bootstrap}", *alter, "3")
    wait_topic(session, "tools-payments", 3)
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-payments")
    session.run("kafka-topics", B, "{bootstrap}", *alter, "2")
    session.run("kafka-topics", B, "{bootstrap}", "--alter", "--topic", "tools-missing", "--partitions", "2")

    for flag in (
        "--under-replicated-partitions",
        "--unavailable-partitions",
        "--under-min-isr-partitions",
        "--at-min-isr-partitions",
    ):
        session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-.*", flag)

    session.run("kafka-topics", B, "{bootstrap}", "--delete", "--topic", "tools-payments")
    wait_gone(session, "tools-payments")
    session.run("kafka-topics", B, "{bootstrap}", "--delete", "--topic", "tools-payments")
    session.run("kafka-topics", B, "{bootstrap}", "--delete", "--if-exists", "--topic", "tools-payments")
    session.run("kafka-topics", B, "{bootstrap}", "--list", "--topic", "tools-.*")


@scenario()
def topic_errors(session: Session) -> None:
    """What the broker refuses, in the words the tool prints."""
    session.run("kafka-topics", B, "{bootstrap}", "--create", "--topic", "tools-bad", "--partitions", "0")
    session.run(
        "kafka-topics", B, "{bootstrap}", "--create", "--topic", "tools-bad", "--partitions", "1",
        "--replication-factor", "4",
    )  # fmt: skip
    session.run(
        "kafka-topics", B, "{bootstrap}", "--create", "--topic", "tools-bad", "--partitions", "1",
        "--config", "retention.ms=soon",
    )  # fmt: skip
    session.run(
        "kafka-topics", B, "{bootstrap}", "--create", "--topic", "tools-bad", "--partitions", "1",
        "--config", "no.such.config=1",
    )  # fmt: skip
    session.run("kafka-topics", B, "{bootstrap}", "--create", "--topic", "tools bad", "--partitions", "1")
    session.run("kafka-topics", B, "{bootstrap}", "--create", "--topic", "x" * 250, "--partitions", "1")
    session.run("kafka-topics", B, "{bootstrap}", "--list", "--topic", "tools-bad")


@scenario()
def topic_on_an_unregistered_broker(session: Session) -> None:
    """A replica on a broker that is not registered (tests/compat/kafka_tools/known-differences.toml)."""
    nowhere = ("--create", "--topic", "tools-nowhere", "--replica-assignment", "1:7")
    session.run("kafka-topics", B, "{bootstrap}", *nowhere)
    session.run("kafka-topics", B, "{bootstrap}", "--list", "--topic", "tools-nowhere")


@scenario(reference="kafka-4-kraft", lines=("kafka-4",))
def topics_in_pages(session: Session) -> None:
    """Kafka 4.x's kafka-topics describes through DescribeTopicPartitions (KIP-966) where a broker serves
    it, in pages of --partition-size-limit-per-response partitions: a topic wider than a page is
    continued from the answer's cursor, and a limit below 1 counts as 1."""
    # KRaft with KIP-966's ELR sets min.insync.replicas cluster-wide, which the topics' configs would
    # show: a topic override of the same value shows alike on every broker.
    minimum = ("--config", "min.insync.replicas=1")
    create(session, "tools-wide", 12, *minimum)
    create(session, "tools-narrow", 2, *minimum)
    describe = (B, "{bootstrap}", "--describe", "--partition-size-limit-per-response")
    session.run("kafka-topics", *describe, "5", "--topic", "tools-(wide|narrow)")
    session.run("kafka-topics", *describe, "0", "--topic", "tools-narrow")
    session.run("kafka-topics", *describe, "1", "--topic", "tools-missing")
