"""kafka-consumer-groups: list, describe (offsets, members, state), reset-offsets (every kind of target,
dry run, execute, export and import), delete-offsets and delete, with groups the console consumer made."""

from __future__ import annotations

import re
from collections.abc import Callable

from confluent_kafka.admin import AdminClient

from tests.support.tool_scenarios.session import Session, StepFailed, scenario, wait_for
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"
TOPIC = "tools-groups"
#: Keys that murmur2 sends to partitions 0, 1 and 2 of three: f, a, b.
RECORDS = "f:zero-1\nf:zero-2\na:one-1\na:one-2\na:one-3\nb:two-1\n"


def _own_groups(text: str) -> str:
    """--list names every group of the broker: only this scenario's are shown."""
    return "\n".join(line for line in text.splitlines() if "tools-group" in line or "GROUP" in line)


_COORDINATOR = re.compile(r"\S+:\d+\s+\(\d+\)")


def _coordinator(text: str) -> str:
    """Which broker coordinates a group follows from who leads its __consumer_offsets partition, which
    the brokers place at random: the column says a broker, not which."""
    return _COORDINATOR.sub("<coordinator>", text)


def group_stable(session: Session, group: str, members: int) -> bool:
    admin = AdminClient({"bootstrap.servers": session.bootstrap})
    try:
        (future,) = admin.describe_consumer_groups([group], request_timeout=10).values()
        described = future.result(15)
    except Exception:
        return False
    return str(described.state).endswith("STABLE") and len(described.members) == members


@scenario()
def consumer_groups(session: Session) -> None:
    create(session, TOPIC, 3, record=False)
    producer = ("kafka-console-producer", B, "{bootstrap}", "--topic", TOPIC)
    session.quiet(*producer, "--property", "parse.key=true", "--property", "key.separator=:", stdin=RECORDS)
    consumer = ("kafka-console-consumer", B, "{bootstrap}", "--topic", TOPIC)
    session.run(*consumer, "--group", "tools-group-1", "--from-beginning", "--max-messages", "6", sort=True)
    groups = ("kafka-consumer-groups", B, "{bootstrap}")
    one = ("--group", "tools-group-1")
    session.run(*groups, "--list", shown=_own_groups, sort=True)
    session.run(*groups, "--describe", *one)
    session.run(*groups, "--describe", *one, "--members")
    session.run(*groups, "--describe", *one, "--members", "--verbose")
    session.run(*groups, "--describe", *one, "--state", shown=_coordinator)
    session.run(*groups, "--describe", *one, "--offsets")

    # a group with a member
    member = session.start(*consumer, "--group", "tools-group-2", "--from-beginning")
    wait_for(lambda: group_stable(session, "tools-group-2", 1), 60, "tools-group-2 stable with one member")
    two = ("--group", "tools-group-2")
    session.run(*groups, "--describe", *two)
    session.run(*groups, "--describe", *two, "--members")
    session.run(*groups, "--describe", *two, "--state", shown=_coordinator)
    session.run(*groups, "--list", "--state", shown=_own_groups, sort=True)
    session.run(*groups, "--reset-offsets", *two, "--topic", TOPIC, "--to-earliest", "--execute")
    session.run(*groups, "--delete", *two)
    stopped = member.stop()
    if stopped.exit_code not in (0, 130, 143):
        raise StepFailed(f"the console consumer of tools-group-2 ended with {stopped.exit_code}")
    session.note(f"the member of tools-group-2 stopped: {stopped.stderr.strip().splitlines()[-1:]}")

    reset = (*groups, "--reset-offsets", *one)
    session.run(*reset, "--topic", TOPIC, "--to-earliest")
    session.run(*reset, "--topic", TOPIC, "--to-earliest", "--execute")
    session.run(*reset, "--topic", TOPIC, "--to-latest", "--dry-run")
    session.run(*reset, "--topic", f"{TOPIC}:1", "--to-offset", "1", "--execute")
    session.run(*reset, "--topic", f"{TOPIC}:1,2", "--shift-by", "5", "--execute")
    session.run(*reset, "--topic", f"{TOPIC}:1", "--shift-by", "-2", "--execute")
    session.run(*reset, "--all-topics", "--to-datetime", "2020-01-01T00:00:00.000", "--dry-run")
    session.run(*reset, "--all-topics", "--by-duration", "P7D", "--dry-run")
    session.run(*reset, "--all-topics", "--to-current", "--dry-run")
    session.run(*reset, "--topic", TOPIC, "--to-offset", "100", "--dry-run")
    exported = session.run(*reset, "--all-topics", "--to-earliest", "--export", "--dry-run")
    plan = session.file("reset.csv", exported.stdout)
    session.run(*reset, "--from-file", plan, "--execute")
    session.run(*reset, "--topic", "tools-missing", "--to-earliest", "--execute")
    session.run(
        *groups, "--reset-offsets", "--group", "tools-group-new", "--topic", TOPIC, "--to-latest", "--execute"
    )
    session.run(*groups, "--describe", "--group", "tools-group-new", "--offsets")

    session.run(*groups, "--delete-offsets", *one, "--topic", f"{TOPIC}:2")
    session.run(*groups, "--describe", *one, "--offsets")
    session.run(*groups, "--delete-offsets", *one, "--topic", "tools-missing")
    session.run(*groups, "--delete", *one, "--group", "tools-group-new")
    session.run(*groups, "--delete", *one)
    session.run(*groups, "--delete", *two)
    session.run(*groups, "--list", shown=_own_groups, sort=True)


@scenario()
def missing_group(session: Session) -> None:
    """A group that does not exist (tests/compat/kafka_tools/known-differences.toml: the 4.x tools)."""
    session.run("kafka-consumer-groups", B, "{bootstrap}", "--describe", "--group", "tools-group-missing")


@scenario(targets=("single-node", "cluster"), lines=("kafka-4",), reference="kafka-4-kraft")
def consumer_group_configs(session: Session) -> None:
    """kafka-configs on GROUP resources of a consumer group (KIP-848): set, described, refused outside
    the broker's group.consumer.* bounds, deleted."""
    group = ("--entity-type", "groups", "--entity-name", "tools-consumer-configs")
    configs = ("kafka-configs", B, "{bootstrap}")
    session.run(*configs, "--alter", *group, "--add-config", "consumer.heartbeat.interval.ms=6000")
    session.run(*configs, "--alter", *group, "--add-config", "consumer.session.timeout.ms=50000")
    every_broker_describes(session, group, lambda out: "consumer.session.timeout.ms=50000 " in out)
    session.run(*configs, "--describe", *group, sort=True)
    session.run(*configs, "--alter", *group, "--add-config", "consumer.session.timeout.ms=1000")
    session.run(*configs, "--alter", *group, "--add-config", "consumer.heartbeat.interval.ms=20000")
    session.run(*configs, "--alter", *group, "--delete-config", "consumer.session.timeout.ms")
    every_broker_describes(session, group, lambda out: "consumer.session.timeout.ms" not in out)
    session.run(*configs, "--describe", *group, sort=True)


def every_broker_describes(session: Session, group: tuple[str, ...], seen: Callable[[str], bool]) -> None:
    """Until each broker's description of the group shows a change made through one of them: a
    cluster's brokers learn it a moment apart (ZooKeeper's change notification; a KRaft broker's
    metadata log), and the tool may ask any of them."""
    for host, port in session.target.addresses.values():
        broker = f"{host}:{port}"

        def described(broker: str = broker) -> bool:
            return seen(session.quiet("kafka-configs", B, broker, "--describe", *group).stdout)

        wait_for(described, 30, f"broker {broker} to describe the group's change")
