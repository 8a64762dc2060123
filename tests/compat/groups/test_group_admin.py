"""What `kafka-consumer-groups`-style tools ask, through confluent-kafka's and kafka-python's admin clients:
list, describe (members, client ids, hosts, assignments), committed offsets, reset, delete."""

from __future__ import annotations

import time

import pytest

from tests.compat.groups.group_clients import create_topic, produce, start_members, wait_for_split
from tests.support.broker_process import BrokerProcess


@pytest.mark.parametrize("client", ["confluent", "confluent-consumer"])
def test_confluent_admin_lists_describes_resets_and_deletes_groups(
    group_broker: BrokerProcess, client: str
) -> None:
    from confluent_kafka import (
        ConsumerGroupState,
        ConsumerGroupTopicPartitions,
        ConsumerGroupType,
        TopicPartition,
    )
    from confluent_kafka.admin import AdminClient

    topic, group = f"admin-{client}", f"admin-{client}"
    create_topic(group_broker.bootstrap, topic, 4)
    produce(group_broker.bootstrap, topic, 40, 4)
    members = start_members(client, group_broker.bootstrap, group, topic, 2, commit_every=1)
    admin = AdminClient({"bootstrap.servers": group_broker.bootstrap})
    try:
        wait_for_split([m.assignment for m in members], 4)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len({v for m in members for _, _, v in m.consumed}) < 40:
            time.sleep(0.1)
        time.sleep(1)  # the last commits
        listed = admin.list_consumer_groups(states={ConsumerGroupState.STABLE}).result(15)
        mine = [g for g in listed.valid if g.group_id == group]
        assert mine and mine[0].state == ConsumerGroupState.STABLE
        expected_type = (
            ConsumerGroupType.CONSUMER if client == "confluent-consumer" else ConsumerGroupType.CLASSIC
        )
        assert mine[0].type == expected_type
        described = admin.describe_consumer_groups([group])[group].result(15)
        assert described.state == ConsumerGroupState.STABLE
        assert sorted(m.client_id for m in described.members) == sorted(m.name for m in members)
        assert all(m.host.endswith("127.0.0.1") for m in described.members)
        owned = sorted(tp.partition for m in described.members for tp in m.assignment.topic_partitions)
        assert owned == [0, 1, 2, 3]
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(4)])
        offsets = admin.list_consumer_group_offsets([request])[group].result(15)
        assert sorted(tp.offset for tp in offsets.topic_partitions) == [10, 10, 10, 10]
    finally:
        for member in members:
            member.stop()
    empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(15).valid
    assert group in [g.group_id for g in empty]
    # reset-offsets of the now empty group, then delete it
    reset = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p, 3) for p in range(4)])
    admin.alter_consumer_group_offsets([reset])[group].result(15)
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
    assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(p, 3) for p in range(4)]
    admin.delete_consumer_groups([group])[group].result(15)
    assert all(g.group_id != group for g in admin.list_consumer_groups().result(15).valid)


def test_kafka_python_admin_describes_resets_and_deletes_a_group(group_broker: BrokerProcess) -> None:
    from kafka import KafkaAdminClient, TopicPartition

    topic, group = "admin-kafka-python", "admin-kafka-python"
    create_topic(group_broker.bootstrap, topic, 2)
    produce(group_broker.bootstrap, topic, 10, 2)
    [member] = start_members("kafka-python", group_broker.bootstrap, group, topic, 1, commit_every=1)
    admin = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap)
    try:
        wait_for_split([member.assignment], 2)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(member.consumed) < 10:
            time.sleep(0.1)
        time.sleep(0.5)
        listed = [g for g in admin.list_groups(states_filter=["Stable"]) if g["group_id"] == group]
        assert listed == [
            {"group_id": group, "protocol_type": "consumer", "group_state": "Stable", "group_type": "classic"}
        ]
        described = admin.describe_groups([group])[group]
        assert (described["group_state"], described["protocol_data"]) == ("Stable", "range")
        [m] = described["members"]
        assert (m["client_id"], m["client_host"]) == (member.name, "/127.0.0.1")
        assert m["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1]}]
        offsets = admin.list_group_offsets({group: None})[group]
        assert sorted((tp.partition, meta.offset) for tp, meta in offsets.items()) == [(0, 5), (1, 5)]
    finally:
        member.stop()
    admin.reset_group_offsets(group, {TopicPartition(topic, 0): 2})
    admin.delete_group_offsets(group, [TopicPartition(topic, 1)])
    offsets = admin.list_group_offsets({group: None})[group]
    assert [(tp.partition, meta.offset) for tp, meta in offsets.items()] == [(0, 2)]
    assert admin.delete_groups([group]) == {group: "OK"}
    assert all(g["group_id"] != group for g in admin.list_groups())
    admin.close()
