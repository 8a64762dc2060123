"""kafka-share-groups (KIP-932): list, describe (offsets, members, state), reset-offsets, delete-offsets
and delete, with share groups the console share consumer made. Kafka 3.9 has no share groups: the
transcripts are recorded against Kafka 4.x in KRaft mode, one node and three (neither broker needs an
opt-in: both serve share groups by default)."""

from __future__ import annotations

import re

from odradek.protocol.messages import share_group_describe as describe
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from tests.support.kafka_tools import Background
from tests.support.raw_client import RawClient
from tests.support.tool_scenarios.groups import every_broker_describes
from tests.support.tool_scenarios.session import Session, StepFailed, columns, scenario, wait_for
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"
TOPIC = "tools-share"
GROUP = "tools-share-group"
_COORDINATOR = re.compile(r"\S+:\d+\s+\(\d+\)")


def _own_groups(text: str) -> str:
    """--list names every share group of the broker: only this scenario's are shown."""
    return "\n".join(line for line in text.splitlines() if line.split()[:1] in ([GROUP], ["GROUP"]))


def _coordinator(text: str) -> str:
    return _COORDINATOR.sub("<coordinator>", text)


def _member(text: str) -> str:
    """A member id is a random Uuid the broker gives (base64, which the normaliser does not know)."""
    return columns(text, **{"CONSUMER-ID": "<member-id>"})


def _lag(text: str) -> str:
    """The lag counts the records sent until one was consumed: not a fixed number (share-group-lag
    compares a lag that is)."""
    return columns(text, LAG="<lag>")


def _start_offset(text: str) -> str:
    """The partition's end, after as many records as were sent until one was consumed."""
    return columns(text, **{"START-OFFSET": "<end>", "NEW-OFFSET": "<end>"})


def group_state(session: Session, group: str) -> tuple[str, int, int]:
    """(state, members, assigned partitions) of a share group, from ShareGroupDescribe to its
    coordinator (on a cluster, another broker answers NOT_COORDINATOR: ("", 0, 0) then)."""
    host, port = session.target.addresses[1]
    with RawClient(port, timeout=5, host=host) as client:
        found = client.request(FindCoordinatorRequest(key=group, key_type=0), 2)
    if found.error_code != 0:
        return "", 0, 0
    with RawClient(found.port, timeout=5, host=found.host) as client:
        answer = client.request(describe.ShareGroupDescribeRequest(group_ids=[group]), 1)
    (described,) = answer.groups
    if described.error_code != 0:
        return "", 0, 0
    assigned = sum(len(t.partitions) for m in described.members for t in m.assignment.topic_partitions)
    return described.group_state, len(described.members), assigned


def consuming(session: Session, topic: str, group: str) -> Background:
    """A console share consumer of `topic` in `group`, once it consumed a record. The share group
    starts at the partition's end, from the member's first fetch: records are sent until one was
    consumed (Kafka writes no start offset before; odradek does at once)."""
    create(session, topic, 1, record=False)
    member = session.start(
        "kafka-console-share-consumer", B, "{bootstrap}", "--topic", topic, "--group", group
    )
    wait_for(lambda: group_state(session, group)[1:] == (1, 1), 60, f"{group} with one member assigned")
    wait_for(lambda: _consumed(session, topic, group), 90, f"a record consumed by {group}", interval=1)
    return member


def stop(session: Session, member: Background, group: str) -> None:
    stopped = member.stop()
    if stopped.exit_code not in (0, 130, 143):
        raise StepFailed(f"the console share consumer ended with {stopped.exit_code}")
    wait_for(lambda: group_state(session, group)[:2] == ("Empty", 0), 60, f"{group} empty")


@scenario(targets=("single-node", "cluster"), lines=("kafka-4",), reference="kafka-4-kraft")
def share_groups(session: Session) -> None:
    groups = ("kafka-share-groups", B, "{bootstrap}")
    one = ("--group", GROUP)
    member = consuming(session, TOPIC, GROUP)
    session.run(*groups, "--list", shown=_own_groups, sort=True)
    session.run(*groups, "--describe", *one, "--members", shown=_member)
    session.run(*groups, "--describe", *one, "--state", shown=_coordinator)
    stop(session, member, GROUP)
    session.run(*groups, "--describe", *one, "--state", shown=_coordinator)
    session.run(*groups, "--reset-offsets", *one, "--topic", TOPIC, "--to-earliest", "--dry-run")
    session.run(*groups, "--reset-offsets", *one, "--topic", TOPIC, "--to-earliest", "--execute")
    session.run(*groups, "--describe", *one, "--offsets", shown=_lag)
    session.run(*groups, "--delete-offsets", *one, "--topic", TOPIC)
    session.run(*groups, "--describe", *one)
    session.run(*groups, "--delete", *one)
    session.run(*groups, "--list", shown=_own_groups)
    session.run(*groups, "--describe", *one)


@scenario(targets=("single-node", "cluster"), lines=("kafka-4",), reference="kafka-4-kraft")
def share_group_lag(session: Session) -> None:
    """The lag of a share group moved to the partition's end: 0 (DescribeShareGroupOffsets v1)."""
    topic, group = f"{TOPIC}-lag", f"{GROUP}-lag"
    stop(session, consuming(session, topic, group), group)
    groups = ("kafka-share-groups", B, "{bootstrap}", "--group", group)
    session.run(*groups, "--reset-offsets", "--topic", topic, "--to-latest", "--execute", shown=_start_offset)
    session.run(*groups, "--describe", "--offsets", shown=_start_offset)
    session.run(*groups, "--delete")


def _consumed(session: Session, topic: str, group: str) -> bool:
    """Sends a record, then: whether the group has a start offset written past 0 (a record consumed
    and acknowledged)."""
    session.quiet("kafka-console-producer", B, "{bootstrap}", "--topic", topic, stdin="record\n")
    result = session.quiet(
        "kafka-share-groups", B, "{bootstrap}", "--describe", "--group", group, check=False
    )
    return result.exit_code == 0 and re.search(rf"{topic}\s+0\s+[1-9]\d*\s", result.stdout) is not None


@scenario(targets=("single-node", "cluster"), lines=("kafka-4",), reference="kafka-4-kraft")
def share_group_configs(session: Session) -> None:
    """kafka-configs on GROUP resources of a share group: set, described, refused outside the broker's
    bounds or by an unknown name, deleted."""
    group = ("--entity-type", "groups", "--entity-name", "tools-share-configs")
    configs = ("kafka-configs", B, "{bootstrap}")
    session.run(*configs, "--alter", *group, "--add-config", "share.auto.offset.reset=earliest")
    session.run(*configs, "--alter", *group, "--add-config", "share.heartbeat.interval.ms=6000")
    every_broker_describes(session, group, lambda out: "share.heartbeat.interval.ms=6000 " in out)
    session.run(*configs, "--describe", *group, sort=True)
    session.run(*configs, "--alter", *group, "--add-config", "share.session.timeout.ms=1000")
    session.run(*configs, "--alter", *group, "--add-config", "share.isolation.level=dirty")
    session.run(*configs, "--alter", *group, "--delete-config", "share.auto.offset.reset")
    every_broker_describes(session, group, lambda out: "share.auto.offset.reset" not in out)
    session.run(*configs, "--describe", *group, sort=True)
