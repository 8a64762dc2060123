"""Why a group's coordinator cannot answer: which broker should, and what is wrong with it.

A group is coordinated by the leader of its `__consumer_offsets` partition (Kafka's
`abs(groupId.hashCode) % offsets.topic.num.partitions`). When that partition has no leader (its
replicas' brokers are down), every request about the group fails until one is back; the console says
so, naming the brokers, from one Metadata request instead of waiting out a DescribeGroups timeout.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.cli.client import Admin
from odradek.cli.errors import CliError, kafka_error_message
from odradek.console.data.cluster import NO_LEADER, BrokerMemory
from odradek.coordinator.partitioning import partition_for

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class CoordinatorTrouble:
    """A sentence for a person and the broker(s) concerned, e.g. "3 (127.0.0.4:9092)"."""

    message: str
    brokers: str


def coordinator_trouble(admin: Admin, group: str, memory: BrokerMemory) -> CoordinatorTrouble | None:
    """Why `group` has no coordinator now, or None when its coordinator partition has a live leader."""
    from confluent_kafka import KafkaException

    try:
        metadata = admin.client.list_topics(OFFSETS_TOPIC, timeout=admin.timeout)
    except KafkaException as exception:
        raise CliError(kafka_error_message(exception.args[0], admin.bootstrap, "Metadata")) from None
    topic = metadata.topics.get(OFFSETS_TOPIC)
    if topic is None or not topic.partitions:
        return None  # not created yet: the first group request creates it
    number = partition_for(group, len(topic.partitions))
    partition = topic.partitions.get(number)
    if partition is None:
        return None
    live = {broker.id: f"{broker.host}:{broker.port}" for broker in metadata.brokers.values()}
    if partition.leader != NO_LEADER and partition.leader in live:
        return None
    replicas = list(partition.replicas) or ([partition.leader] if partition.leader != NO_LEADER else [])
    named = [_broker(replica, live, memory) for replica in replicas]
    if not named:
        return None
    which = named[0] if len(named) == 1 else "brokers " + ", ".join(named)
    subject = f"broker {which}" if len(named) == 1 else which
    message = (
        f"group '{group}' has no coordinator: its {OFFSETS_TOPIC} partition {number} has no leader, "
        f"and {subject} holding it {'is' if len(named) == 1 else 'are'} down"
    )
    return CoordinatorTrouble(message, ", ".join(named))


def _broker(broker_id: int, live: dict[int, str], memory: BrokerMemory) -> str:
    address = live.get(broker_id) or memory.address_of(broker_id)
    return f"{broker_id} ({address})" if address else str(broker_id)
