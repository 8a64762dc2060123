"""Each znode shape against Kafka 3.9's: serialize writes what Kafka writes, parse reads what Kafka
writes (and older versions, and extra fields), and malformed data is refused with the path named."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable

import pytest

from odradek.cluster.zookeeper.broker_znode import BrokerRegistration, FeatureRange, ListenerEndpoint
from odradek.cluster.zookeeper.client import split_chroot
from odradek.cluster.zookeeper.cluster_znodes import (
    ClusterIdZnode,
    ControllerZnode,
    parse_controller_epoch,
    serialize_controller_epoch,
)
from odradek.cluster.zookeeper.config_znodes import ConfigChangeNotification, EntityConfigZnode
from odradek.cluster.zookeeper.paths import PERSISTENT_PATHS, config_change_sequence
from odradek.cluster.zookeeper.producer_id_znode import (
    MAX_PRODUCER_ID,
    ProducerIdBlock,
    ProducerIdsExhaustedError,
    first_block,
)
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode, TopicAssignmentZnode
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.storage.partition import topic_id_from_string
from tests.support import znode_golden as golden
from tests.support.znode_golden import assert_same_json

BROKER = BrokerRegistration(
    broker_id=1,
    endpoints=(
        ListenerEndpoint("PLAINTEXT", "127.0.0.2", 9092, "PLAINTEXT"),
        ListenerEndpoint("REPLICATION", "127.0.0.2", 9093, "SSL"),
    ),
    timestamp_ms=1_700_000_000_000,
    rack="rack-a",
)


def test_cluster_id_version_is_the_string_1() -> None:
    assert_same_json(ClusterIdZnode(golden.CLUSTER_ID).serialize(), golden.CLUSTER_ID_ZNODE)
    assert ClusterIdZnode.parse(golden.CLUSTER_ID_ZNODE.encode()).cluster_id == golden.CLUSTER_ID


def test_broker_registration_is_version_5_with_kafkas_fields() -> None:
    assert_same_json(BROKER.serialize(), golden.BROKER_ZNODE)
    assert BrokerRegistration.parse(1, golden.BROKER_ZNODE.encode()) == BROKER


def test_broker_registration_without_plaintext_or_rack_has_null_host_and_no_rack_field() -> None:
    broker = BrokerRegistration(
        7, (ListenerEndpoint("SECURE", "broker1.example", 9094, "SASL_SSL"),), 1_700_000_000_000
    )
    assert_same_json(broker.serialize(), golden.BROKER_ZNODE_NO_PLAINTEXT_NO_RACK)
    assert BrokerRegistration.parse(7, golden.BROKER_ZNODE_NO_PLAINTEXT_NO_RACK.encode()) == broker


def test_broker_registration_reads_the_examples_in_kafkas_comments() -> None:
    # BrokerIdZNode.decode's documented versions 1, 2 and 5 (with a feature field Kafka added later)
    v1 = b'{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    assert BrokerRegistration.parse(0, v1).endpoints == (
        ListenerEndpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),
    )
    v2 = (
        b'{"version":2,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"]}'
    )
    assert [e.security_protocol for e in BrokerRegistration.parse(0, v2).endpoints] == ["PLAINTEXT", "SSL"]
    v5 = (
        b'{"version":5,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        b'"endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],'
        b'"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"PLAINTEXT"},"rack":"dc1",'
        b'"features": {"feature": {"min_version":1, "first_active_version":2, "max_version":3}}}'
    )
    broker = BrokerRegistration.parse(0, v5)
    assert broker.rack == "dc1" and broker.jmx_port == 9999 and broker.timestamp_ms == 2233345666
    assert broker.features == {"feature": FeatureRange(1, 3)}
    assert broker.endpoints[0] == ListenerEndpoint("CLIENT", "host1", 9092, "SSL")


def test_broker_registration_keeps_ipv6_hosts_in_brackets() -> None:
    broker = BrokerRegistration(1, (ListenerEndpoint("PLAINTEXT", "::1", 9092, "PLAINTEXT"),), 0)
    assert b'"PLAINTEXT://[::1]:9092"' in broker.serialize()
    assert BrokerRegistration.parse(1, broker.serialize()).endpoints[0].host == "::1"


def test_topic_assignment_is_version_3_with_string_partition_keys() -> None:
    assignment = TopicAssignmentZnode({1: [2, 3, 1], 0: [1, 2, 3]}, topic_id_from_string(golden.TOPIC_ID))
    assert_same_json(assignment.serialize(), golden.TOPIC_ZNODE)
    assert TopicAssignmentZnode.parse("orders", golden.TOPIC_ZNODE.encode()) == TopicAssignmentZnode(
        {0: [1, 2, 3], 1: [2, 3, 1]}, topic_id_from_string(golden.TOPIC_ID), {}, {}
    )


def test_topic_assignment_lists_only_partitions_with_moving_replicas() -> None:
    assignment = TopicAssignmentZnode({0: [1, 2], 1: [2, 3]}, None, adding_replicas={0: [3], 1: []})
    written = assignment.serialize()
    assert b'"adding_replicas":{"0":[3]}' in written and b"topic_id" not in written
    # a topic written before topic ids (and without the reassignment fields) is read as Kafka reads it
    old = TopicAssignmentZnode.parse("t", b'{"version":1,"partitions":{"0":[1]}}')
    assert old == TopicAssignmentZnode({0: [1]}, None, {}, {})


def test_partition_state_is_version_1_and_leaves_out_a_recovered_leader_recovery_state() -> None:
    state = PartitionStateZnode(leader=1, leader_epoch=0, isr=[1, 2, 3], controller_epoch=5)
    assert_same_json(state.serialize(), golden.PARTITION_STATE_ZNODE)
    assert PartitionStateZnode.parse("t", 0, golden.PARTITION_STATE_ZNODE.encode()) == state
    recovering = PartitionStateZnode(1, 0, [1], 5, leader_recovery_state=1)
    assert b'"leader_recovery_state":1' in recovering.serialize()
    assert PartitionStateZnode.parse("t", 0, recovering.serialize()) == recovering


def test_controller_timestamp_is_a_string_and_epoch_a_plain_number() -> None:
    controller = ControllerZnode(broker_id=1, timestamp_ms=1_700_000_000_000)
    assert_same_json(controller.serialize(), golden.CONTROLLER_ZNODE)
    assert ControllerZnode.parse(golden.CONTROLLER_ZNODE.encode()) == controller
    # version 1, before KRaft migration, had no kraftControllerEpoch
    assert ControllerZnode.parse(b'{"version":1,"brokerid":3,"timestamp":"5"}') == ControllerZnode(3, 5)
    assert serialize_controller_epoch(5) == golden.CONTROLLER_EPOCH_ZNODE
    assert parse_controller_epoch(golden.CONTROLLER_EPOCH_ZNODE) == 5


def test_entity_config_and_change_notification() -> None:
    config = EntityConfigZnode({"retention.ms": "60000", "cleanup.policy": "compact"})
    assert_same_json(config.serialize(), golden.TOPIC_CONFIG_ZNODE)
    assert EntityConfigZnode.parse(golden.TOPIC_CONFIG_ZNODE.encode(), "/config/topics/t") == config
    assert EntityConfigZnode.parse(None, "/config/topics/t") == EntityConfigZnode({})
    change = ConfigChangeNotification("topics/orders")
    assert_same_json(change.serialize(), golden.CONFIG_CHANGE_ZNODE)
    assert ConfigChangeNotification.parse(golden.CONFIG_CHANGE_ZNODE.encode(), "/c") == change
    v1 = b'{"version":1,"entity_type":"brokers","entity_name":"<default>"}'
    parsed = ConfigChangeNotification.parse(v1, "/c")
    assert (parsed.entity_type, parsed.entity_name) == ("brokers", "<default>")
    assert config_change_sequence("config_change_0000000042") == 42


def test_producer_id_block_bounds_are_strings_and_inclusive() -> None:
    block = first_block(broker_id=1)
    assert (block.first_producer_id, block.last_producer_id) == (0, 999)
    assert_same_json(block.serialize(), golden.PRODUCER_ID_BLOCK_ZNODE)
    assert ProducerIdBlock.parse(golden.PRODUCER_ID_BLOCK_ZNODE.encode()) == block
    assert block.next_block(2) == ProducerIdBlock(2, 1000)
    assert ProducerIdBlock.parse(None) is None and ProducerIdBlock.parse(b"") is None
    with pytest.raises(ProducerIdsExhaustedError):
        ProducerIdBlock(1, MAX_PRODUCER_ID - 1500).next_block(1)


def test_persistent_paths_are_kafkas() -> None:
    assert set(PERSISTENT_PATHS) == {
        "/consumers",
        "/brokers/ids",
        "/brokers/topics",
        "/config/changes",
        "/admin/delete_topics",
        "/brokers/seqid",
        "/isr_change_notification",
        "/latest_producer_id_block",
        "/log_dir_event_notification",
        "/config/topics",
        "/config/clients",
        "/config/users",
        "/config/brokers",
        "/config/ips",
    }


@pytest.mark.parametrize(
    ("parse", "data", "message"),
    [
        (lambda d: ClusterIdZnode.parse(d), b"", "holds no data"),
        (lambda d: ClusterIdZnode.parse(d), b"{not json", "does not hold JSON"),
        (lambda d: ClusterIdZnode.parse(d), b"[1]", "not an object"),
        (lambda d: ClusterIdZnode.parse(d), b'{"version":"1"}', "no 'id' field"),
        (lambda d: ControllerZnode.parse(d), b'{"brokerid":"1"}', "'brokerid' is '1', not an integer"),
        (lambda d: parse_controller_epoch(d), b"five", "not a controller epoch"),
        (
            lambda d: PartitionStateZnode.parse("t", 0, d),
            b'{"leader":1,"leader_epoch":0,"isr":[1]}',
            "no 'controller_epoch' field",
        ),
        (
            lambda d: PartitionStateZnode.parse("t", 0, d),
            b'{"leader":true}',
            "'leader' is True, not an integer",
        ),
        (lambda d: TopicAssignmentZnode.parse("t", d), b'{"partitions":{"x":[1]}}', "not a partition number"),
        # digits to str.isdigit() that int() refuses: a ValueError escaped, not a malformed znode
        (
            lambda d: TopicAssignmentZnode.parse("t", d),
            '{"partitions":{"²":[1]}}'.encode(),
            "not a partition",
        ),
        (
            lambda d: TopicAssignmentZnode.parse("t", d),
            b'{"partitions":{"' + b"9" * 5000 + b'":[1]}}',
            "not a",
        ),
        (
            lambda d: TopicAssignmentZnode.parse("t", d),
            b'{"partitions":{},"topic_id":"abc"}',
            "not a Kafka uuid",
        ),
        (
            lambda d: BrokerRegistration.parse(1, d),
            b'{"version":5,"jmx_port":-1,"endpoints":["x"]}',
            "NAME://",
        ),
        (lambda d: ProducerIdBlock.parse(d), b'{"broker":1,"block_start":0,"block_end":"9"}', "not a string"),
        (lambda d: ConfigChangeNotification.parse(d, "/c"), b'{"version":3}', "unsupported notification"),
    ],
)
def test_malformed_znodes_are_refused_naming_the_path_and_field(
    parse: Callable[[bytes], object], data: bytes, message: str
) -> None:
    with pytest.raises(MalformedZnodeError, match=message):
        parse(data)


def test_topic_id_round_trips_through_kafkas_uuid_string() -> None:
    topic_id = uuid.uuid4()
    assert (
        TopicAssignmentZnode.parse("t", TopicAssignmentZnode({0: [1]}, topic_id).serialize()).topic_id
        == topic_id
    )


@pytest.mark.parametrize(
    ("connect_string", "hosts", "chroot"),
    [
        ("127.0.0.1:2181", "127.0.0.1:2181", ""),
        ("h1:2181,h2:2181/kafka", "h1:2181,h2:2181", "/kafka"),
        ("h1:2181/kafka/cluster-a/", "h1:2181", "/kafka/cluster-a"),
        ("h1:2181/", "h1:2181", ""),
    ],
)
def test_connect_string_chroot_is_what_follows_the_first_slash(
    connect_string: str, hosts: str, chroot: str
) -> None:
    assert split_chroot(connect_string) == (hosts, chroot)


def test_reassign_partitions_plan_is_kafkas_legacy_partition_assignment() -> None:
    from odradek.cluster.zookeeper.reassign_znode import parse_plan, serialize_plan

    # Kafka's ReassignPartitionsZNode.encode (LegacyPartitionAssignment), field for field
    data = serialize_plan({("orders", 1): [3, 2], ("orders", 0): [2]})
    assert data == (
        b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2]},'
        b'{"topic":"orders","partition":1,"replicas":[3,2]}]}'
    )
    assert parse_plan(data) == {("orders", 0): [2], ("orders", 1): [3, 2]}
    with pytest.raises(MalformedZnodeError):
        parse_plan(b'{"version":1}')


@pytest.mark.parametrize(
    "data",
    [b"{not json", b"\xff\xfe", b"[" * 100_000, b"[]", b'"text"', b'{"version":1,"config":[]}', b"7"],
    ids=["not-json", "not-utf-8", "too-deep", "list", "string", "config-not-an-object", "number"],
)
@pytest.mark.parametrize("path", ["/config/brokers/<default>", "/config/topics/t"])
def test_an_entity_config_znode_kafka_cannot_parse_reads_as_no_overrides_logged_without_its_data(
    data: bytes, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: MalformedZnodeError, which stopped the broker at start for /config/brokers; Kafka's
    ConfigEntityZNode.decode reads such a znode as an empty config."""
    with caplog.at_level(logging.WARNING):
        assert EntityConfigZnode.parse(data, path) == EntityConfigZnode({})
    assert path in caplog.text
    assert "not json" not in caplog.text and "text" not in caplog.text and "[[" not in caplog.text


def test_an_entity_config_value_that_is_not_a_string_is_still_malformed() -> None:
    # as Kafka, whose decode throws there (a broker's start-up stops, a topic keeps its configs)
    with pytest.raises(
        MalformedZnodeError, match=re.escape("/config/topics/t config 'retention.ms' is 5, not a string")
    ):
        EntityConfigZnode.parse(b'{"version":1,"config":{"retention.ms":5}}', "/config/topics/t")
