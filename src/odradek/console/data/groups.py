"""Consumer groups: the list, one group's members and assignments, committed offsets and lag, and the
offset reset (the CLI's plan and commit: kafka-consumer-groups' rules, refused while members are active).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from odradek.cli.client import Admin
from odradek.cli.errors import CliError
from odradek.cli.group_offsets import Partition, apply_reset, committed_offsets, plan_reset
from odradek.console.data.cluster import BrokerMemory, cluster_state
from odradek.console.data.offsets import log_end_offsets
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.list_groups import ListedGroup

RESET_TARGETS = ("earliest", "latest", "timestamp")


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str
    protocol_type: str


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    host: str
    assignment: tuple[Partition, ...]


@dataclass(frozen=True)
class PartitionLag:
    topic: str
    partition: int
    committed_offset: int | None
    log_end_offset: int | None
    owner: str | None

    @property
    def lag(self) -> int | None:
        if self.committed_offset is None or self.log_end_offset is None or self.log_end_offset < 0:
            return None
        return max(0, self.log_end_offset - self.committed_offset)


@dataclass(frozen=True)
class GroupDetail:
    group_id: str
    state: str
    protocol: str
    protocol_type: str
    coordinator: str | None
    members: tuple[Member, ...]
    partitions: tuple[PartitionLag, ...]

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)


def list_groups(admin: Admin) -> list[GroupListing]:
    """Every group, from ListGroups sent to each live broker (each answers for the groups it
    coordinates), in parallel and each bounded by the request timeout.

    Not librdkafka's ListConsumerGroups: with a broker down it waits past its request timeout, and
    librdkafka 2.16 aborted the console's process (an assertion in rd_kafka_enq_once) when that broker
    came back. A broker that is down is not in DescribeCluster's answer and is not asked: its groups
    have no coordinator until it, or another leader of their __consumer_offsets partition, is back.
    """
    description: Any = admin.wait(admin.client.describe_cluster(**admin.options), "DescribeCluster")
    brokers = {node.id: f"{node.host}:{node.port}" for node in description.nodes}
    with ThreadPoolExecutor(max_workers=max(1, len(brokers))) as pool:
        answers = {
            broker_id: pool.submit(_groups_of_broker, admin, address)
            for broker_id, address in brokers.items()
        }
    listings: dict[str, GroupListing] = {}
    for broker_id, answer in sorted(answers.items()):
        try:
            listed = answer.result()
        except CliError as error:
            raise CliError(
                f"ListGroups to broker {broker_id} ({brokers[broker_id]}) failed: {error.message}"
            ) from None
        for group in listed:
            kind = "consumer" if group.protocol_type else "simple"
            listings[group.group_id] = GroupListing(group.group_id, group.group_state or "Unknown", kind)
    return sorted(listings.values(), key=lambda listing: listing.group_id)


#: ListGroups errors asked again within the request timeout, as Kafka's admin client does: a broker
#: just (re)started is still loading its __consumer_offsets partitions.
_RETRIABLE = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE})


def _groups_of_broker(admin: Admin, address: str) -> list[ListedGroup]:
    from odradek.cli.wire import list_groups as ask

    deadline = time.monotonic() + admin.timeout
    while True:
        try:
            return ask(admin.config, address, max(0.1, deadline - time.monotonic()))
        except CliError as error:
            if error.kafka_code not in _RETRIABLE or time.monotonic() >= deadline:
                raise
        time.sleep(0.2)


def describe_group(admin: Admin, group: str) -> GroupDetail | None:
    """The group with its lag per partition; None when the coordinator knows no such group."""
    from confluent_kafka import ConsumerGroupState, KafkaError

    futures = admin.client.describe_consumer_groups([group], **admin.options)
    try:
        description: Any = admin.wait(futures[group], "DescribeGroups")
    except CliError as error:
        if error.kafka_code == KafkaError.GROUP_ID_NOT_FOUND:
            return None
        raise
    if description.state == ConsumerGroupState.DEAD:
        return None
    members = tuple(
        Member(
            m.member_id,
            m.client_id,
            m.host,
            tuple(sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)),
        )
        for m in sorted(description.members, key=lambda m: m.member_id)
    )
    return GroupDetail(
        group_id=group,
        state=state_name(description.state),
        protocol=description.partition_assignor or "",
        protocol_type="simple" if description.is_simple_consumer_group else "consumer",
        coordinator=_node(description.coordinator),
        members=members,
        partitions=tuple(group_lag(admin, group, members)),
    )


def group_lag(admin: Admin, group: str, members: tuple[Member, ...] = ()) -> list[PartitionLag]:
    """Committed offset, log end offset and owner of every partition the group commits to or is assigned."""
    owners = {partition: member.client_id for member in members for partition in member.assignment}
    committed = committed_offsets(admin, group)
    partitions = sorted(set(owners) | set(committed))
    ends = log_end_offsets(admin, partitions)
    return [
        PartitionLag(
            topic,
            number,
            committed.get((topic, number)),
            ends.get((topic, number)),
            owners.get((topic, number)),
        )
        for topic, number in partitions
    ]


def plan_offset_reset(
    admin: Admin, group: str, topics: list[str], target: str, timestamp_ms: int | None
) -> dict[Partition, tuple[int | None, int]]:
    """(committed offset, new offset) of every partition of `topics` (all the group commits to if empty)."""
    if target not in RESET_TARGETS:
        raise CliError(f"unknown reset target {target!r}")
    if target == "timestamp" and timestamp_ms is None:
        raise CliError("resetting to a timestamp needs the timestamp")
    committed = committed_offsets(admin, group)
    if topics:
        state = cluster_state(admin, BrokerMemory())
        missing = [topic for topic in topics if topic not in state.topics]
        if missing:
            raise CliError(f"topic '{missing[0]}' does not exist")
        partitions = sorted((t, p.partition) for t in topics for p in state.topics[t].partitions)
    else:
        partitions = sorted(committed)
    if not partitions:
        raise CliError(f"group '{group}' has no committed offsets; choose the topics to reset")
    arguments = argparse.Namespace(
        to_earliest=target == "earliest",
        to_latest=target == "latest",
        to_datetime=timestamp_ms if target == "timestamp" else None,
        to_offset=None,
        shift_by=None,
    )
    plan = plan_reset(admin, arguments, partitions, committed)
    return {partition: (committed.get(partition), plan[partition]) for partition in partitions}


def apply_offset_reset(admin: Admin, group: str, offsets: dict[Partition, int]) -> None:
    """Commit `offsets` (what the preview showed) for the group; refused while it has active members."""
    detail = describe_group(admin, group)
    if detail is not None and detail.members:
        raise CliError(
            f"offsets can only be reset while group '{group}' has no active members (it is {detail.state}); "
            "stop its consumers first"
        )
    apply_reset(admin, group, offsets)


def state_name(state: Any) -> str:
    name = getattr(state, "name", None) or ""
    return {
        "STABLE": "Stable",
        "EMPTY": "Empty",
        "DEAD": "Dead",
        "PREPARING_REBALANCING": "PreparingRebalance",
        "COMPLETING_REBALANCING": "CompletingRebalance",
    }.get(name, "Unknown")


def _node(node: Any) -> str | None:
    return f"{node.id} ({node.host}:{node.port})" if node is not None else None
