"""CreateTopics, DeleteTopics and CreatePartitions at every version, over raw frames (kafka-python's
protocol classes): what each version carries and every per-topic error Kafka's controller gives."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from tests.integration.admin.conftest import DEFAULT_PARTITIONS, STATIC_RETENTION_HOURS
from tests.integration.admin.wire import Wire
from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(60)

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
TOPIC_DELETION_DISABLED = 73
UNKNOWN_TOPIC_ID = 100

DYNAMIC_TOPIC_CONFIG = 1
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

_Topic = CreateTopicsRequest.CreatableTopic
_Assignment = _Topic.CreatableReplicaAssignment
_Config = _Topic.CreatableTopicConfig


def creatable(
    name: str,
    partitions: int = 1,
    replication_factor: int = 1,
    assignments: dict[int, list[int]] | None = None,
    configs: dict[str, str | None] | None = None,
) -> Any:
    return _Topic(
        name=name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        assignments=[_Assignment(partition_index=p, broker_ids=b) for p, b in (assignments or {}).items()],
        configs=[_Config(name=k, value=v) for k, v in (configs or {}).items()],
    )


def create(wire: Wire, version: int, *topics: Any, validate_only: bool = False) -> dict[str, Any]:
    request = CreateTopicsRequest(topics=list(topics), timeout_ms=10_000, validate_only=validate_only)
    return {result.name: result for result in wire.send(request, version).topics}


def topic_names(wire: Wire) -> set[str]:
    return {t.name for t in wire.send(MetadataRequest(topics=None), 1).topics}


def test_api_versions_advertise_the_admin_apis(wire: Wire) -> None:
    response = wire.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    served = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert {key: served.get(key) for key in (19, 20, 21, 23, 32, 33, 35, 37, 44, 60)} == {
        19: (0, 7),  # CreateTopics
        20: (0, 6),  # DeleteTopics
        21: (0, 2),  # DeleteRecords
        23: (0, 4),  # OffsetForLeaderEpoch
        32: (0, 4),  # DescribeConfigs
        33: (0, 2),  # AlterConfigs
        35: (0, 5),  # DescribeLogDirs
        37: (0, 3),  # CreatePartitions
        44: (0, 1),  # IncrementalAlterConfigs
        60: (0, 2),  # DescribeCluster
    }


@pytest.mark.parametrize("version", range(8))
def test_create_topics_at_every_version(wire: Wire, version: int) -> None:
    name = f"create-v{version}"
    result = create(wire, version, creatable(name, 2, 1, configs={"retention.ms": "3600000"}))[name]
    assert result.error_code == NONE
    if version >= 1:
        assert result.error_message is None
    if version >= 5:
        assert (result.num_partitions, result.replication_factor) == (2, 1)
        configs = {c.name: c for c in result.configs}
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("3600000", 1)
        assert configs["cleanup.policy"].config_source == DEFAULT_CONFIG
        assert not any(c.read_only or c.is_sensitive for c in result.configs)
    if version >= 7:
        metadata = {
            t.name: t
            for t in wire.send(
                MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]), 10
            ).topics
        }
        assert result.topic_id == metadata[name].topic_id
    again = create(wire, version, creatable(name, 2, 1))[name]
    assert again.error_code == TOPIC_ALREADY_EXISTS
    if version >= 1:
        assert again.error_message == f"Topic '{name}' already exists."


def test_created_topic_configs_report_broker_synonym_sources(wire: Wire) -> None:
    result = create(wire, 7, creatable("create-sources", 1, 1))["create-sources"]
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == str(STATIC_RETENTION_HOURS * 3_600_000)
    assert configs["retention.ms"].config_source == STATIC_BROKER_CONFIG


def test_minus_one_means_the_broker_defaults(wire: Wire) -> None:
    result = create(wire, 4, creatable("create-defaults", -1, -1))["create-defaults"]
    assert result.error_code == NONE
    metadata = wire.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="create-defaults")]), 1
    )
    assert len(metadata.topics[0].partitions) == DEFAULT_PARTITIONS
    assert create(wire, 5, creatable("create-defaults-v5", -1, -1))["create-defaults-v5"].num_partitions == 3


def test_manual_replica_assignment(wire: Wire) -> None:
    result = create(wire, 5, creatable("create-assigned", -1, -1, assignments={0: [1], 1: [1]}))[
        "create-assigned"
    ]
    assert (result.error_code, result.num_partitions, result.replication_factor) == (NONE, 2, 1)


def test_validate_only_creates_nothing(wire: Wire) -> None:
    result = create(
        wire,
        7,
        creatable("create-validated", 4, 1, configs={"cleanup.policy": "compact"}),
        validate_only=True,
    )
    answer = result["create-validated"]
    assert (answer.error_code, answer.num_partitions) == (NONE, 4)
    assert {c.name: c.value for c in answer.configs}["cleanup.policy"] == "compact"
    assert "create-validated" not in topic_names(wire)
    assert create(wire, 1, creatable("x y"), validate_only=True)["x y"].error_code == INVALID_TOPIC_EXCEPTION


def test_create_topics_errors(wire: Wire) -> None:
    create(wire, 7, creatable("create-taken"), creatable("create.collide"))
    results = create(
        wire,
        7,
        creatable("create-dup"),
        creatable("create-dup", 2),
        creatable("create-taken"),
        creatable("bad/name"),
        creatable("a" * 250),
        creatable("create_collide"),
        creatable("create-zero-partitions", 0),
        creatable("create-minus-two-partitions", -2),
        creatable("create-zero-rf", 1, 0),
        creatable("create-rf-too-big", 1, 3),
        creatable("create-assign-and-count", 1, -1, assignments={0: [1]}),
        creatable("create-assign-and-rf", -1, 1, assignments={0: [1]}),
        creatable("create-unknown-broker", -1, -1, assignments={0: [2]}),
        creatable("create-twice-broker", -1, -1, assignments={0: [1, 1]}),
        creatable("create-gap", -1, -1, assignments={0: [1], 2: [1]}),
        creatable("create-empty-replicas", -1, -1, assignments={0: []}),
        creatable("create-unknown-config", configs={"no.such.config": "1"}),
        creatable("create-bad-config", configs={"retention.ms": "soon"}),
        creatable("create-null-config", configs={"retention.ms": None}),
        creatable("__cluster_metadata"),
    )
    expected = {
        "create-dup": (INVALID_REQUEST, "Duplicate topic name."),
        "create-taken": (TOPIC_ALREADY_EXISTS, "Topic 'create-taken' already exists."),
        "bad/name": (
            INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'bad/name' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        ),
        "a" * 250: (
            INVALID_TOPIC_EXCEPTION,
            f"Topic name is invalid: the length of '{'a' * 250}' is longer than the max allowed length 249",
        ),
        "create_collide": (
            INVALID_TOPIC_EXCEPTION,
            "Topic 'create_collide' collides with existing topic: create.collide",
        ),
        "create-zero-partitions": (
            INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        "create-minus-two-partitions": (
            INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        "create-zero-rf": (
            INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        "create-rf-too-big": (
            INVALID_REPLICATION_FACTOR,
            "Replication factor: 3 larger than available brokers: 1.",
        ),
        "create-assign-and-count": (
            INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
        "create-assign-and-rf": (
            INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        ),
        "create-unknown-broker": (
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 2, but no such broker is registered.",
        ),
        "create-twice-broker": (
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 1 more than once.",
        ),
        "create-gap": (
            INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        ),
        "create-empty-replicas": (
            INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        ),
        "create-unknown-config": (INVALID_CONFIG, "Unknown topic config name: no.such.config"),
        "create-null-config": (INVALID_CONFIG, "Null value not supported for topic configs: retention.ms"),
        "__cluster_metadata": (
            INVALID_REQUEST,
            "Creation of internal topic __cluster_metadata is prohibited.",
        ),
    }
    assert {name: (results[name].error_code, results[name].error_message) for name in expected} == expected
    assert results["create-bad-config"].error_code == INVALID_CONFIG
    assert "retention.ms" in results["create-bad-config"].error_message
    assert len(results) == 19  # the duplicated name is answered once
    for result in results.values():
        assert (result.num_partitions, result.replication_factor, result.configs) == (-1, -1, [])
    assert set(expected) & topic_names(wire) == {"create-taken"}


# ----- DeleteTopics ----------------------------------------------------------------------------------


def delete_request(version: int, *names: str | None, ids: tuple[uuid.UUID, ...] = ()) -> Any:
    if version < 6:
        return DeleteTopicsRequest(topic_names=list(names), timeout_ms=10_000)
    state = DeleteTopicsRequest.DeleteTopicState
    topics = [state(name=n, topic_id=uuid.UUID(int=0)) for n in names]
    topics += [state(name=None, topic_id=i) for i in ids]
    return DeleteTopicsRequest(topics=topics, timeout_ms=10_000)


@pytest.mark.parametrize("version", range(7))
def test_delete_topics_by_name_at_every_version(wire: Wire, version: int) -> None:
    name = f"delete-v{version}"
    create(wire, 7, creatable(name))
    responses = wire.send(delete_request(version, name, "delete-no-such-topic"), version).responses
    assert {r.name: r.error_code for r in responses} == {
        name: NONE,
        "delete-no-such-topic": UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert name not in topic_names(wire)
    if version >= 5:
        assert all(r.error_message is None for r in responses)


def test_delete_topics_by_id(wire: Wire) -> None:
    created = create(wire, 7, creatable("delete-by-id"), creatable("delete-both"))
    topic_id = created["delete-by-id"].topic_id
    unknown = uuid.uuid4()
    responses = wire.send(delete_request(6, ids=(topic_id, unknown)), 6).responses
    by_id = {r.topic_id: r for r in responses}
    assert (by_id[topic_id].name, by_id[topic_id].error_code) == ("delete-by-id", NONE)
    assert (by_id[unknown].name, by_id[unknown].error_code) == (None, UNKNOWN_TOPIC_ID)
    assert by_id[unknown].error_message == "This server does not host this topic ID."
    assert "delete-by-id" not in topic_names(wire)
    recreated = create(wire, 7, creatable("delete-by-id", 2))["delete-by-id"]
    assert recreated.error_code == NONE and recreated.topic_id != topic_id


def test_delete_topics_refuses_ambiguous_entries(wire: Wire) -> None:
    created = create(
        wire, 7, creatable("delete-ambiguous"), creatable("delete-dup-id"), creatable("delete-dup-name")
    )
    state = DeleteTopicsRequest.DeleteTopicState
    dup_id = created["delete-dup-id"].topic_id
    request = DeleteTopicsRequest(
        topics=[
            state(name="delete-ambiguous", topic_id=created["delete-ambiguous"].topic_id),
            state(name=None, topic_id=uuid.UUID(int=0)),
            state(name=None, topic_id=dup_id),
            state(name=None, topic_id=dup_id),
            state(name="delete-dup-name", topic_id=uuid.UUID(int=0)),
            state(name="delete-dup-name", topic_id=uuid.UUID(int=0)),
        ],
        timeout_ms=10_000,
    )
    responses = [(r.name, r.error_code, r.error_message) for r in wire.send(request, 6).responses]
    assert responses == [
        ("delete-ambiguous", INVALID_REQUEST, "You may not specify both topic name and topic id."),
        (None, INVALID_REQUEST, "Neither topic name nor id were specified."),
        (None, INVALID_REQUEST, "Duplicate topic id."),
        ("delete-dup-name", INVALID_REQUEST, "Duplicate topic name."),
    ]
    assert {"delete-ambiguous", "delete-dup-id", "delete-dup-name"} <= topic_names(wire)


def test_internal_topics_cannot_be_deleted(wire: Wire) -> None:
    exists = "__consumer_offsets" in topic_names(wire)
    responses = wire.send(delete_request(5, "__consumer_offsets"), 5).responses
    assert responses[0].error_code == (TOPIC_DELETION_DISABLED if exists else UNKNOWN_TOPIC_OR_PARTITION)


def test_delete_topics_when_deletion_is_disabled(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"delete.topic.enable": "false"}).start()
    try:
        with Wire(broker.bootstrap) as wire:
            create(wire, 7, creatable("kept"))
            for version in (0, 2, 3, 6):
                responses = wire.send(delete_request(version, "kept", "never-existed"), version).responses
                code = INVALID_REQUEST if version < 3 else TOPIC_DELETION_DISABLED
                assert [(r.name, r.error_code) for r in responses] == [
                    ("kept", code),
                    ("never-existed", code),
                ]
            assert "kept" in topic_names(wire)
    finally:
        broker.stop()


# ----- CreatePartitions ------------------------------------------------------------------------------


def grow(name: str, count: int, assignments: list[list[int]] | None = None) -> Any:
    assignment = CreatePartitionsRequest.CreatePartitionsTopic.CreatePartitionsAssignment
    return CreatePartitionsRequest.CreatePartitionsTopic(
        name=name,
        count=count,
        assignments=None if assignments is None else [assignment(broker_ids=b) for b in assignments],
    )


@pytest.mark.parametrize("version", range(4))
def test_create_partitions_at_every_version(wire: Wire, version: int) -> None:
    name = f"grow-v{version}"
    create(wire, 7, creatable(name, 1))
    request = CreatePartitionsRequest(
        topics=[grow(name, 3, [[1], [1]])], timeout_ms=10_000, validate_only=False
    )
    results = wire.send(request, version).results
    assert [(r.name, r.error_code, r.error_message) for r in results] == [(name, NONE, None)]
    metadata = wire.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=name)]), 1)
    assert len(metadata.topics[0].partitions) == 3


def test_create_partitions_errors_and_validate_only(wire: Wire) -> None:
    create(wire, 7, creatable("grow-errors", 2))
    request = CreatePartitionsRequest(
        topics=[
            grow("grow-no-such-topic", 3),
            grow("grow-errors", 2),
            grow("grow-errors-dup", 3),
            grow("grow-errors-dup", 4),
        ],
        timeout_ms=10_000,
        validate_only=True,
    )
    results = {r.name: (r.error_code, r.error_message) for r in wire.send(request, 3).results}
    assert results == {
        "grow-no-such-topic": (UNKNOWN_TOPIC_OR_PARTITION, None),
        "grow-errors": (INVALID_PARTITIONS, "Topic already has 2 partitions."),
        "grow-errors-dup": (INVALID_REQUEST, "Duplicate topic name."),
    }
    cases = {
        1: (
            INVALID_PARTITIONS,
            "Topic currently has 2 partitions, which is higher than the requested 1.",
        ),
        4: (
            INVALID_REPLICA_ASSIGNMENT,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
        ),
    }
    for count, expected in cases.items():
        request = CreatePartitionsRequest(
            topics=[grow("grow-errors", count, [[1]] if count == 4 else None)],
            timeout_ms=10_000,
            validate_only=False,
        )
        result = wire.send(request, 1).results[0]
        assert (result.error_code, result.error_message) == expected
    validated = CreatePartitionsRequest(
        topics=[grow("grow-errors", 5)], timeout_ms=10_000, validate_only=True
    )
    assert wire.send(validated, 2).results[0].error_code == NONE
    metadata = wire.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="grow-errors")]), 1
    )
    assert len(metadata.topics[0].partitions) == 2


@pytest.mark.parametrize("validate_only", [False, True])
def test_create_partitions_refused_for_consumer_offsets(wire: Wire, validate_only: bool) -> None:
    """More partitions of `__consumer_offsets` would move every group to another partition (a group's
    partition is a hash modulo the count), stranding its offsets: refused, count unchanged."""
    before = wire.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="__consumer_offsets")]), 1
    )
    count = len(before.topics[0].partitions)
    assert count > 0
    request = CreatePartitionsRequest(
        topics=[grow("__consumer_offsets", count + 1)], timeout_ms=10_000, validate_only=validate_only
    )
    result = wire.send(request, 3).results[0]
    assert result.error_code == INVALID_REQUEST
    assert result.error_message.startswith(
        "Cannot increase the number of partitions of internal topic __consumer_offsets"
    )
    after = wire.send(
        MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="__consumer_offsets")]), 1
    )
    assert len(after.topics[0].partitions) == count
