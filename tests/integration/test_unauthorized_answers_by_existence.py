"""For every API that names a topic, group or transactional id, a principal with no ACL at all gets the
same answer (codes, messages, every field) for a resource that exists and for one that does not: the
authorizer's refusal comes before anything about the resource is looked at, so nothing it may not see
leaks through the answer (existence, partition count, state). Topic ids are not covered: as in Kafka,
an unknown id is UNKNOWN_TOPIC_ID (ids are random 128-bit values, not guessable names)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopicData,
)
from odradek.protocol.messages.alter_configs import AlterableConfig as AlterConfig
from odradek.protocol.messages.alter_configs import AlterConfigsRequest
from odradek.protocol.messages.alter_configs import AlterConfigsResource as AlterResource
from odradek.protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from odradek.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_groups import DeleteGroupsRequest
from odradek.protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.describe_groups import DescribeGroupsRequest
from odradek.protocol.messages.describe_log_dirs import DescribableLogDirTopic, DescribeLogDirsRequest
from odradek.protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest
from odradek.protocol.messages.end_txn import EndTxnRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from odradek.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from odradek.protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from odradek.protocol.records import Record, build_record_batch
from tests.support.acls import sasl_client, start_acl_broker
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

#: Names of the same length, so that nothing differs but existence.
TOPICS = ("present-topic", "missing-topic")
GROUPS = ("present-group", "missing-group")
TXNS = ("present-txn", "missing-txn")


@pytest.fixture(scope="module")
def bob(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    """bob, who has no ACL; the present resources made by the super user."""
    broker, port = start_acl_broker(Path(tmp_path_factory.mktemp("existence")) / "data")
    admin, stranger = sasl_client(port, "admin"), sasl_client(port, "bob")
    try:
        topic = CreatableTopic(
            name=TOPICS[0], num_partitions=3, replication_factor=1, assignments=[], configs=[]
        )
        created = admin.request(CreateTopicsRequest(topics=[topic], timeout_ms=10000), 5)
        assert created.topics[0].error_code == ErrorCode.NONE, created
        _retry(
            lambda: admin.request(_offset_commit(GROUPS[0], TOPICS[0]), 8).topics[0].partitions[0].error_code
        )
        _retry(lambda: admin.request(_init(TXNS[0]), 4).error_code)
        yield stranger
    finally:
        admin.close()
        stranger.close()
        broker.stop()


def _retry(call: Callable[[], int]) -> None:
    """Until the coordinator answers NONE (it may still be creating or loading its topic)."""
    for _ in range(100):
        if call() == ErrorCode.NONE:
            return
        time.sleep(0.2)
    raise AssertionError("the coordinator never answered")


def _offset_commit(group: str, topic: str) -> OffsetCommitRequest:
    partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="")
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequestTopic(name=topic, partitions=[partition])],
    )


def _init(txn: str) -> InitProducerIdRequest:
    return InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000)


def _produce(topic: str) -> ProduceRequest:
    batch = build_record_batch([Record(offset=0, timestamp=1_700_000_000_000, key=None, value=b"v")])
    data = TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[data])


def _fetch(topic: str) -> FetchRequest:
    partition = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return FetchRequest(max_wait_ms=0, min_bytes=0, topics=[FetchTopic(topic=topic, partitions=[partition])])


def _list_offsets(topic: str) -> ListOffsetsRequest:
    partitions = [ListOffsetsPartition(partition_index=p, timestamp=-1) for p in (0, 7)]
    return ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=topic, partitions=partitions)])


def _epochs(topic: str) -> OffsetForLeaderEpochRequest:
    partitions = [OffsetForLeaderPartition(partition=p, leader_epoch=0) for p in (0, 7)]
    return OffsetForLeaderEpochRequest(topics=[OffsetForLeaderTopic(topic=topic, partitions=partitions)])


def _describe_configs(topic: str) -> DescribeConfigsRequest:
    resource = DescribeConfigsResource(resource_type=2, resource_name=topic, configuration_keys=None)
    return DescribeConfigsRequest(resources=[resource], include_synonyms=True, include_documentation=True)


def _alter_configs(topic: str) -> AlterConfigsRequest:
    config = AlterConfig(name="retention.ms", value="1000")
    return AlterConfigsRequest(
        resources=[AlterResource(resource_type=2, resource_name=topic, configs=[config])]
    )


def _incremental_alter_configs(topic: str) -> IncrementalAlterConfigsRequest:
    config = AlterableConfig(name="retention.ms", config_operation=0, value="1000")
    resource = AlterConfigsResource(resource_type=2, resource_name=topic, configs=[config])
    return IncrementalAlterConfigsRequest(resources=[resource])


def _delete_records(topic: str) -> DeleteRecordsRequest:
    partitions = [DeleteRecordsPartition(partition_index=p, offset=0) for p in (0, 7)]
    return DeleteRecordsRequest(
        topics=[DeleteRecordsTopic(name=topic, partitions=partitions)], timeout_ms=1000
    )


def _create_partitions(topic: str) -> CreatePartitionsRequest:
    grow = CreatePartitionsTopic(name=topic, count=2, assignments=None)
    return CreatePartitionsRequest(topics=[grow], timeout_ms=1000, validate_only=True)


def _create_topics(topic: str) -> CreateTopicsRequest:
    creatable = CreatableTopic(name=topic, num_partitions=2, replication_factor=1, assignments=[], configs=[])
    return CreateTopicsRequest(topics=[creatable], timeout_ms=1000, validate_only=True)


def _log_dirs(topic: str) -> DescribeLogDirsRequest:
    return DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic=topic, partitions=[0, 7])])


def _offset_fetch(group: str) -> OffsetFetchRequest:
    topics = [OffsetFetchRequestTopics(name=TOPICS[0], partition_indexes=[0])]
    return OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=topics)])


def _offset_delete(group: str) -> OffsetDeleteRequest:
    topic = OffsetDeleteRequestTopic(
        name=TOPICS[0], partitions=[OffsetDeleteRequestPartition(partition_index=0)]
    )
    return OffsetDeleteRequest(group_id=group, topics=[topic])


def _add_partitions(txn: str) -> AddPartitionsToTxnRequest:
    return AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn,
        v3_and_below_producer_id=0,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[AddPartitionsToTxnTopicData(name=TOPICS[0], partitions=[0])],
    )


def _txn_offset_commit(txn: str) -> TxnOffsetCommitRequest:
    partition = TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata="")
    return TxnOffsetCommitRequest(
        transactional_id=txn,
        group_id=GROUPS[0],
        producer_id=0,
        producer_epoch=0,
        topics=[TxnOffsetCommitRequestTopic(name=TOPICS[0], partitions=[partition])],
    )


#: (what, the names, request for a name, version)
CASES: list[tuple[str, tuple[str, str], Callable[[str], Any], int]] = [
    ("Metadata", TOPICS, lambda t: MetadataRequest(topics=[MetadataRequestTopic(name=t)]), 12),
    ("Produce", TOPICS, _produce, 9),
    ("Fetch", TOPICS, _fetch, 12),
    ("ListOffsets", TOPICS, _list_offsets, 7),
    ("OffsetForLeaderEpoch", TOPICS, _epochs, 4),
    ("DescribeConfigs", TOPICS, _describe_configs, 4),
    ("AlterConfigs", TOPICS, _alter_configs, 2),
    ("IncrementalAlterConfigs", TOPICS, _incremental_alter_configs, 1),
    (
        "DeleteTopics",
        TOPICS,
        lambda t: DeleteTopicsRequest(topics=[DeleteTopicState(name=t)], timeout_ms=1000),
        6,
    ),
    ("DeleteRecords", TOPICS, _delete_records, 2),
    ("CreateTopics", TOPICS, _create_topics, 7),
    ("CreatePartitions", TOPICS, _create_partitions, 3),
    (
        "DescribeProducers",
        TOPICS,
        lambda t: DescribeProducersRequest(topics=[TopicRequest(name=t, partition_indexes=[0, 7])]),
        0,
    ),
    ("DescribeLogDirs", TOPICS, _log_dirs, 4),
    ("OffsetCommit", GROUPS, lambda g: _offset_commit(g, TOPICS[0]), 8),
    ("OffsetFetch", GROUPS, _offset_fetch, 8),
    ("OffsetDelete", GROUPS, _offset_delete, 0),
    (
        "DescribeGroups",
        GROUPS,
        lambda g: DescribeGroupsRequest(groups=[g], include_authorized_operations=True),
        5,
    ),
    ("DeleteGroups", GROUPS, lambda g: DeleteGroupsRequest(groups_names=[g]), 2),
    ("ConsumerGroupDescribe", GROUPS, lambda g: ConsumerGroupDescribeRequest(group_ids=[g]), 1),
    ("FindCoordinator(group)", GROUPS, lambda g: FindCoordinatorRequest(key_type=0, coordinator_keys=[g]), 4),
    ("FindCoordinator(txn)", TXNS, lambda t: FindCoordinatorRequest(key_type=1, coordinator_keys=[t]), 4),
    ("DescribeTransactions", TXNS, lambda t: DescribeTransactionsRequest(transactional_ids=[t]), 0),
    ("InitProducerId", TXNS, _init, 4),
    ("AddPartitionsToTxn", TXNS, _add_partitions, 3),
    (
        "AddOffsetsToTxn",
        TXNS,
        lambda t: AddOffsetsToTxnRequest(
            transactional_id=t, producer_id=0, producer_epoch=0, group_id=GROUPS[0]
        ),
        3,
    ),
    (
        "EndTxn",
        TXNS,
        lambda t: EndTxnRequest(transactional_id=t, producer_id=0, producer_epoch=0, committed=True),
        3,
    ),
    ("TxnOffsetCommit", TXNS, _txn_offset_commit, 3),
]


def _without(value: Any, name: str) -> Any:
    """The answer with the resource's name blanked out (the two names are the only expected difference)."""
    if isinstance(value, dict):
        return {key: _without(item, name) for key, item in value.items()}
    if isinstance(value, list):
        return [_without(item, name) for item in value]
    if isinstance(value, str):
        return value.replace(name, "<name>")
    return value


@pytest.mark.parametrize(("what", "names", "request_for", "version"), CASES, ids=[case[0] for case in CASES])
def test_an_unauthorized_principal_is_answered_alike_whether_the_resource_exists(
    bob: RawClient, what: str, names: tuple[str, str], request_for: Callable[[str], Any], version: int
) -> None:
    present, missing = (_without(bob.request(request_for(name), version).to_dict(), name) for name in names)
    present.pop("throttle_time_ms", None)
    missing.pop("throttle_time_ms", None)
    assert present == missing, f"{what}: exists {present} / missing {missing}"
