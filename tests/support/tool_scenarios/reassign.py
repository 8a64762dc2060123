"""kafka-reassign-partitions: generate, execute (with and without a replication throttle), verify (which
clears the throttles), list and cancel. A throttle of 1 B/s holds a reassignment in progress once the
first fetch of the new replica has used up the quota, which is how the cancel gets one to cancel."""

from __future__ import annotations

import json

from tests.support.tool_scenarios.metadata import wait_topic
from tests.support.tool_scenarios.session import Session, scenario, wait_for
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"


def reassign(session: Session, *args: str) -> None:
    session.run("kafka-reassign-partitions", B, "{bootstrap}", *args)


def _generated(text: str) -> str:
    """The current assignment stays; the proposed one is random (Kafka's assignment starts at a random
    broker): what must hold of it is said instead."""
    marker = "Proposed partition reassignment configuration"
    if marker not in text:
        return text
    current, proposed = text.split(marker, 1)
    plan = json.loads(proposed.strip())
    replicas = [tuple(p["replicas"]) for p in plan["partitions"]]
    facts = [
        f"partitions: {sorted((p['topic'], p['partition']) for p in plan['partitions'])}",
        f"replication factors: {sorted({len(r) for r in replicas})}",
        f"brokers used: {sorted({b for r in replicas for b in r})}",
        f"no broker twice in a partition: {all(len(set(r)) == len(r) for r in replicas)}",
    ]
    return current + marker + "\n" + "\n".join(facts)


def no_reassignment(session: Session) -> bool:
    listed = session.quiet("kafka-reassign-partitions", B, "{bootstrap}", "--list")
    return "No partition reassignments found." in listed.stdout


@scenario(targets=("single-node",))
def reassign_single_node(session: Session) -> None:
    create(session, "tools-reassign", 2, record=False)
    move = session.file("move.json", json.dumps({"topics": [{"topic": "tools-reassign"}], "version": 1}))
    reassign(session, "--generate", "--topics-to-move-json-file", move, "--broker-list", "1")
    plan = {"version": 1, "partitions": [{"topic": "tools-reassign", "partition": 0, "replicas": [1]}]}
    path = session.file("plan.json", json.dumps(plan))
    reassign(session, "--execute", "--reassignment-json-file", path)
    wait_for(lambda: no_reassignment(session), 60, "the reassignment to complete")
    reassign(session, "--verify", "--reassignment-json-file", path)
    reassign(session, "--list")
    reassign(session, "--cancel", "--reassignment-json-file", path)
    elsewhere = {"version": 1, "partitions": [{"topic": "tools-reassign", "partition": 1, "replicas": [2]}]}
    reassign(
        session,
        "--execute",
        "--reassignment-json-file",
        session.file("elsewhere.json", json.dumps(elsewhere)),
    )
    missing = {
        "version": 1,
        "partitions": [{"topic": "tools-reassign-missing", "partition": 0, "replicas": [1]}],
    }
    reassign(
        session, "--execute", "--reassignment-json-file", session.file("missing.json", json.dumps(missing))
    )


@scenario(targets=("cluster",))
def reassign_cluster(session: Session) -> None:
    topic = "tools-reassign"
    session.quiet(
        "kafka-topics", B, "{bootstrap}", "--create", "--topic", topic, "--replica-assignment", "1:2,2:3"
    )
    wait_topic(session, topic, 2)
    session.quiet("kafka-console-producer", B, "{bootstrap}", "--topic", topic, stdin="one\ntwo\nthree\n")
    move = session.file("move.json", json.dumps({"topics": [{"topic": topic}], "version": 1}))
    session.run(
        "kafka-reassign-partitions", B, "{bootstrap}", "--generate", "--topics-to-move-json-file", move,
        "--broker-list", "1,2,3", shown=_generated,
    )  # fmt: skip
    plan = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "replicas": [2, 3]},
            {"topic": topic, "partition": 1, "replicas": [3, 1]},
        ],
    }
    path = session.file("plan.json", json.dumps(plan))
    reassign(session, "--execute", "--reassignment-json-file", path)  # throttles: reassign-throttled
    wait_for(lambda: no_reassignment(session), 60, "the reassignment to complete")
    reassign(session, "--verify", "--reassignment-json-file", path)
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", topic)
    reassign(session, "--execute", "--reassignment-json-file", path)
    bad = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 2]}]}
    reassign(session, "--execute", "--reassignment-json-file", session.file("bad.json", json.dumps(bad)))
    gone = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 7]}]}
    reassign(session, "--execute", "--reassignment-json-file", session.file("gone.json", json.dumps(gone)))


@scenario(targets=("cluster",))
def reassign_throttled(session: Session) -> None:
    """--throttle: the replication throttles --execute sets on the brokers and the topic, and --verify
    clears once the reassignment is complete."""
    topic = "tools-reassign-throttled"
    create(session, topic, 2, record=False)  # replicas 1,2,3 and 2,3,1
    plan = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "replicas": [2, 3]},
            {"topic": topic, "partition": 1, "replicas": [3, 1]},
        ],
    }
    path = session.file("throttled.json", json.dumps(plan))
    reassign(session, "--execute", "--reassignment-json-file", path, "--throttle", "50000000")
    configs = ("kafka-configs", B, "{bootstrap}", "--describe", "--entity-type")
    session.run(*configs, "topics", "--entity-name", topic)
    for node in ("1", "2", "3"):
        session.run(*configs, "brokers", "--entity-name", node)
    wait_for(lambda: no_reassignment(session), 60, "the reassignment to complete")
    reassign(session, "--verify", "--reassignment-json-file", path)
    session.run(*configs, "topics", "--entity-name", topic)
    session.run(*configs, "brokers", "--entity-name", "1")


@scenario(targets=("cluster",))
def reassign_throttled_cancel(session: Session) -> None:
    """A new replica throttled to 1 B/s never catches up: --list shows the reassignment, --cancel
    stops it and the original replicas stay."""
    topic = "tools-reassign-slow"
    create(session, topic, 1, record=False)  # replicas 1,2,3
    session.quiet(
        "kafka-producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        "5000",
        "--record-size",
        "1000",
        "--throughput",
        "-1",
        "--producer-props",
        "bootstrap.servers={bootstrap}",
        "acks=all",
    )  # fmt: skip  (5 MB: a follower fetches 1 MB at a time)
    shrink = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2]}]}
    session.quiet(
        "kafka-reassign-partitions", B, "{bootstrap}", "--execute", "--reassignment-json-file",
        session.file("shrink.json", json.dumps(shrink)),
    )  # fmt: skip
    wait_for(lambda: no_reassignment(session), 60, "broker 3 to leave the partition")
    session.quiet("kafka-topics", B, "{bootstrap}", "--describe", "--topic", topic)
    grow = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 2, 3]}]}
    path = session.file("grow.json", json.dumps(grow))
    reassign(session, "--execute", "--reassignment-json-file", path, "--throttle", "1")
    reassign(session, "--list")
    reassign(session, "--verify", "--reassignment-json-file", path, "--preserve-throttles")
    reassign(session, "--cancel", "--reassignment-json-file", path)
    wait_for(lambda: no_reassignment(session), 60, "the cancelled reassignment to go")
    reassign(session, "--list")
    session.run("kafka-topics", B, "{bootstrap}", "--describe", "--topic", topic)
    session.run(
        "kafka-configs", B, "{bootstrap}", "--describe", "--entity-type", "brokers", "--entity-name", "3"
    )
