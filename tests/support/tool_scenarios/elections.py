"""kafka-leader-election: preferred and unclean elections. On one broker every election is one that is
not needed; on three, a preferred leader that does not lead (its replica list reordered by
kafka-reassign-partitions) is elected back, and a partition whose every in-sync replica is down gets a
leader again by an unclean election."""

from __future__ import annotations

import json

from tests.support.tool_scenarios.metadata import partitions, wait_partition
from tests.support.tool_scenarios.session import Session, scenario, wait_for
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"


def elect(session: Session, *args: str) -> None:
    session.run("kafka-leader-election", B, "{bootstrap}", *args)


@scenario(targets=("single-node",))
def elections_single_node(session: Session) -> None:
    create(session, "tools-elect", 2, record=False)
    elect(session, "--election-type", "preferred", "--topic", "tools-elect", "--partition", "0")
    elect(session, "--election-type", "unclean", "--topic", "tools-elect", "--partition", "1")
    elect(session, "--election-type", "preferred", "--all-topic-partitions")
    elect(session, "--election-type", "unclean", "--all-topic-partitions")
    plan = {
        "partitions": [{"topic": "tools-elect", "partition": 0}, {"topic": "tools-elect", "partition": 1}]
    }
    elect(
        session,
        "--election-type",
        "preferred",
        "--path-to-json-file",
        session.file("elect.json", json.dumps(plan)),
    )
    elect(session, "--election-type", "preferred", "--topic", "tools-elect-missing", "--partition", "0")
    elect(session, "--election-type", "preferred", "--topic", "tools-elect", "--partition", "5")


@scenario(targets=("cluster",))
def preferred_election(session: Session) -> None:
    create(session, "tools-preferred", 2, record=False)  # partition 0 on 1,2,3; partition 1 on 2,3,1
    elect(session, "--election-type", "preferred", "--topic", "tools-preferred", "--partition", "0")
    # the same replicas in another order: broker 1 still leads, broker 2 is now the preferred leader
    plan = {"version": 1, "partitions": [{"topic": "tools-preferred", "partition": 0, "replicas": [2, 1, 3]}]}
    reassign = ("kafka-reassign-partitions", B, "{bootstrap}", "--reassignment-json-file")
    session.quiet(*reassign, session.file("reorder.json", json.dumps(plan)), "--execute")
    wait_for(
        lambda: all(
            partitions(session, "tools-preferred", n)[0].replica_nodes == [2, 1, 3]
            for n in session.target.addresses
        ),
        60,
        "the new replica order in every broker's metadata",
    )
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-preferred")
    elect(session, "--election-type", "preferred", "--topic", "tools-preferred", "--partition", "0")
    wait_partition(session, "tools-preferred", 0, leader=2)
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", "tools-preferred")
    elect(session, "--election-type", "preferred", "--all-topic-partitions")
    elect(session, "--election-type", "unclean", "--topic", "tools-preferred", "--partition", "1")


@scenario(targets=("cluster",), disruptive=True)
def unclean_election(session: Session) -> None:
    """Broker 2 leads, broker 3 follows; 3 stops (the ISR shrinks to 2), then 2 stops: no leader, and
    3 back is out of the ISR. Only an unclean election gives the partition a leader again."""
    topic = "tools-unclean"
    session.run(
        "kafka-topics", B, "{bootstrap}", "--create", "--topic", topic, "--replica-assignment", "2:3",
        "--config", "min.insync.replicas=1",
    )  # fmt: skip
    wait_partition(session, topic, 0, leader=2, isr=[2, 3])
    session.quiet("kafka-console-producer", B, "{bootstrap}", "--topic", topic, stdin="kept\n")
    session.target.stop_broker(3)
    wait_partition(session, topic, 0, leader=2, isr=[2], nodes=[1, 2])
    session.target.stop_broker(2)
    wait_partition(session, topic, 0, leader=-1, isr=[2], nodes=[1])
    session.target.start_broker(3)
    wait_partition(session, topic, 0, leader=-1, isr=[2], nodes=[1, 3])
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", topic, "--unavailable-partitions")
    elect(session, "--election-type", "preferred", "--topic", topic, "--partition", "0")
    elect(session, "--election-type", "unclean", "--topic", topic, "--partition", "0")
    wait_partition(session, topic, 0, leader=3, isr=[3], nodes=[1, 3])
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", topic)
    # the record broker 3 had is there (read without a group: on brokers of their own, as in the tests,
    # __consumer_offsets does not exist yet, and cannot be made at replication factor 3 with 2 up)
    session.run(
        "kafka-console-consumer", B, "{bootstrap}", "--topic", topic, "--partition", "0",
        "--offset", "earliest", "--max-messages", "1", "--timeout-ms", "20000",
    )  # fmt: skip
    session.target.start_broker(2)
    wait_partition(session, topic, 0, leader=3, isr=[2, 3])
    session.run(
        "kafka-topics", B, "{bootstrap}", "--describe", "--topic", topic, "--under-replicated-partitions"
    )
