"""The ACL matrix: for each API family a principal with the ACL it needs succeeds and one without gets
Kafka's exact authorization error. Principals are SASL PLAIN users on a SASL_PLAINTEXT listener:
admin (super user), alice (the ACLs granted below) and bob (none)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopicData,
)
from odradek.protocol.messages.create_acls import AclCreation, CreateAclsRequest
from odradek.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.messages.describe_acls import DescribeAclsRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.describe_log_dirs import DescribeLogDirsRequest
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
from odradek.protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from odradek.protocol.messages.list_groups import ListGroupsRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from odradek.protocol.records import Record, build_record_batch
from odradek.security.acl import AclOperation, PatternType, ResourceType
from tests.support.acls import grant, sasl_client, start_acl_broker
from tests.support.raw_client import RawClient

Op = AclOperation
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, RawClient]]:
    broker, port = start_acl_broker(Path(tmp_path_factory.mktemp("acl-matrix")) / "data")
    opened = {user: sasl_client(port, user) for user in ("admin", "alice", "bob")}
    try:
        admin = opened["admin"]
        created = admin.request(CreateTopicsRequest(topics=[_topic("orders")], timeout_ms=10000), 5)
        assert created.topics[0].error_code == ErrorCode.NONE, created
        grant(admin, "User:alice", ResourceType.TOPIC, "orders", Op.WRITE, Op.READ, Op.DESCRIBE_CONFIGS)
        grant(
            admin,
            "User:alice",
            ResourceType.TOPIC,
            "alice-",
            Op.CREATE,
            Op.DELETE,
            Op.ALTER,
            pattern=PatternType.PREFIXED,
        )
        grant(admin, "User:alice", ResourceType.GROUP, "alice-", Op.READ, pattern=PatternType.PREFIXED)
        grant(
            admin,
            "User:alice",
            ResourceType.TRANSACTIONAL_ID,
            "alice-",
            Op.WRITE,
            Op.DESCRIBE,
            pattern=PatternType.PREFIXED,
        )
        yield opened
    finally:
        for client in opened.values():
            client.close()
        broker.stop()


def _topic(name: str) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])


def _produce(client: RawClient, topic: str) -> int:
    batch = build_record_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=b"v")])
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])
        ],
    )
    return int(client.request(request, 9).responses[0].partition_responses[0].error_code)


def test_produce(clients: dict[str, RawClient]) -> None:
    assert _produce(clients["alice"], "orders") == ErrorCode.NONE
    assert _produce(clients["bob"], "orders") == TOPIC_DENIED
    # refused before its existence is looked at: bob learns nothing about unknown topics
    assert _produce(clients["bob"], "no-such-topic") == TOPIC_DENIED


def test_fetch_and_list_offsets(clients: dict[str, RawClient]) -> None:
    _produce(clients["alice"], "orders")

    def fetch(client: RawClient, replica_id: int = -1) -> int:
        partition = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
        request = FetchRequest(
            replica_id=replica_id,
            max_wait_ms=0,
            min_bytes=0,
            topics=[FetchTopic(topic="orders", partitions=[partition])],
        )
        return int(client.request(request, 11).responses[0].partitions[0].error_code)

    def list_offsets(client: RawClient) -> int:
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsTopic(
                    name="orders", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
                )
            ],
        )
        return int(client.request(request, 5).topics[0].partitions[0].error_code)

    assert fetch(clients["alice"]) == ErrorCode.NONE
    assert fetch(clients["bob"]) == TOPIC_DENIED
    # a follower's fetch (replica id >= 0) needs CLUSTER_ACTION, whatever its topic ACLs
    assert fetch(clients["alice"], replica_id=1) == TOPIC_DENIED
    # authorized, then answered as Kafka answers a fetch from a broker that is no follower here
    assert fetch(clients["admin"], replica_id=1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert list_offsets(clients["alice"]) == ErrorCode.NONE
    assert list_offsets(clients["bob"]) == TOPIC_DENIED


def test_metadata(clients: dict[str, RawClient]) -> None:
    everything = MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=True
    )
    alice = clients["alice"].request(everything, 12)
    assert [t.name for t in alice.topics] == ["orders"]
    expected = (1 << Op.READ) | (1 << Op.WRITE) | (1 << Op.DESCRIBE) | (1 << Op.DESCRIBE_CONFIGS)
    assert alice.topics[0].topic_authorized_operations == expected
    assert "orders" in [t.name for t in clients["admin"].request(everything, 12).topics]
    assert clients["bob"].request(everything, 12).topics == []  # hidden, not refused
    named = MetadataRequest(topics=[MetadataRequestTopic(name="orders")], allow_auto_topic_creation=False)
    answer = clients["bob"].request(named, 12).topics[0]
    assert (answer.error_code, answer.partitions) == (TOPIC_DENIED, [])


def test_groups(clients: dict[str, RawClient]) -> None:
    def find(client: RawClient, group: str) -> int:
        return int(client.request(FindCoordinatorRequest(key=group, key_type=0), 3).error_code)

    def join(client: RawClient, group: str) -> int:
        request = JoinGroupRequest(
            group_id=group,
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        )
        return int(client.request(request, 5).error_code)

    assert find(clients["alice"], "alice-group") == ErrorCode.NONE
    assert find(clients["bob"], "alice-group") == GROUP_DENIED
    # v4+ joins first get a member id: the request got past authorization
    assert join(clients["alice"], "alice-group") == ErrorCode.MEMBER_ID_REQUIRED
    assert join(clients["bob"], "alice-group") == GROUP_DENIED
    assert join(clients["alice"], "other-group") == GROUP_DENIED
    assert clients["bob"].request(ListGroupsRequest(), 4).groups == []


def test_offsets(clients: dict[str, RawClient]) -> None:
    def commit(client: RawClient, group: str, topic: str = "orders") -> int:
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1, committed_metadata=""
                        )
                    ],
                )
            ],
        )
        return int(client.request(request, 2).topics[0].partitions[0].error_code)

    def fetch(client: RawClient, group: str) -> tuple[int, int]:
        request = OffsetFetchRequest(
            group_id=group, topics=[OffsetFetchRequestTopic(name="orders", partition_indexes=[0])]
        )
        answer = client.request(request, 5)
        return int(answer.error_code), int(
            answer.topics[0].partitions[0].committed_offset
        ) if answer.topics else -1

    assert commit(clients["alice"], "alice-offsets") == ErrorCode.NONE
    assert commit(clients["bob"], "alice-offsets") == GROUP_DENIED
    assert commit(clients["alice"], "other-offsets") == GROUP_DENIED
    # the group is allowed, the topic is not (its existence is not looked at)
    assert commit(clients["alice"], "alice-offsets", "no-such-topic") == TOPIC_DENIED
    assert fetch(clients["alice"], "alice-offsets") == (ErrorCode.NONE, 1)
    assert fetch(clients["bob"], "alice-offsets")[0] == GROUP_DENIED


def test_topic_admin(clients: dict[str, RawClient]) -> None:
    def create(client: RawClient, name: str) -> int:
        return int(
            client.request(CreateTopicsRequest(topics=[_topic(name)], timeout_ms=10000), 5)
            .topics[0]
            .error_code
        )

    def delete(client: RawClient, name: str) -> int:
        return int(
            client.request(DeleteTopicsRequest(topic_names=[name], timeout_ms=10000), 5)
            .responses[0]
            .error_code
        )

    def grow(client: RawClient, name: str) -> int:
        topic = CreatePartitionsTopic(name=name, count=2, assignments=None)
        request = CreatePartitionsRequest(topics=[topic], timeout_ms=10000, validate_only=True)
        return int(client.request(request, 2).results[0].error_code)

    assert create(clients["bob"], "alice-topic") == TOPIC_DENIED
    assert create(clients["alice"], "elsewhere") == TOPIC_DENIED
    assert create(clients["alice"], "alice-topic") == ErrorCode.NONE
    created = clients["admin"].request(
        CreateTopicsRequest(topics=[_topic("admin-topic")], timeout_ms=10000), 5
    )
    assert (created.topics[0].topic_config_error_code, bool(created.topics[0].configs)) == (0, True)
    request = CreateTopicsRequest(topics=[_topic("alice-quiet")], timeout_ms=10000, validate_only=True)
    quiet = clients["alice"].request(request, 5).topics[0]  # no DESCRIBE_CONFIGS: configs withheld
    assert (quiet.error_code, quiet.topic_config_error_code, quiet.configs) == (0, TOPIC_DENIED, [])
    assert grow(clients["alice"], "alice-topic") == ErrorCode.NONE
    assert grow(clients["bob"], "alice-topic") == TOPIC_DENIED
    assert delete(clients["bob"], "alice-topic") == TOPIC_DENIED
    assert delete(clients["alice"], "alice-topic") == ErrorCode.NONE


def test_acl_admin_needs_the_cluster(clients: dict[str, RawClient]) -> None:
    describe = DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY,
        resource_name_filter=None,
        pattern_type_filter=PatternType.ANY,
        principal_filter="User:alice",
        host_filter=None,
        operation=Op.ANY,
        permission_type=1,
    )
    assert clients["alice"].request(describe, 3).error_code == CLUSTER_DENIED
    listed = clients["admin"].request(describe, 3)
    assert listed.error_code == ErrorCode.NONE
    assert {(r.resource_name, r.pattern_type) for r in listed.resources} == {
        ("orders", PatternType.LITERAL),
        ("alice-", PatternType.PREFIXED),
    }
    creation = AclCreation(
        resource_type=ResourceType.TOPIC,
        resource_name="orders",
        resource_pattern_type=PatternType.LITERAL,
        principal="User:bob",
        host="*",
        operation=Op.READ,
        permission_type=3,
    )
    answer = clients["alice"].request(CreateAclsRequest(creations=[creation]), 3)
    assert [r.error_code for r in answer.results] == [CLUSTER_DENIED]


def test_configs(clients: dict[str, RawClient]) -> None:
    def describe(client: RawClient, resource_type: int, name: str) -> int:
        resource = DescribeConfigsResource(
            resource_type=resource_type, resource_name=name, configuration_keys=None
        )
        return int(client.request(DescribeConfigsRequest(resources=[resource]), 4).results[0].error_code)

    def alter(client: RawClient, name: str) -> int:
        config = AlterableConfig(name="retention.ms", config_operation=0, value="100000")
        resource = AlterConfigsResource(resource_type=2, resource_name=name, configs=[config])
        request = IncrementalAlterConfigsRequest(resources=[resource], validate_only=True)
        return int(client.request(request, 1).responses[0].error_code)

    assert describe(clients["alice"], 2, "orders") == ErrorCode.NONE
    assert describe(clients["bob"], 2, "orders") == TOPIC_DENIED
    assert describe(clients["bob"], 4, "1") == CLUSTER_DENIED
    assert describe(clients["admin"], 4, "1") == ErrorCode.NONE
    assert alter(clients["alice"], "orders") == TOPIC_DENIED  # DESCRIBE_CONFIGS does not allow altering
    assert alter(clients["admin"], "orders") == ErrorCode.NONE


def test_cluster_apis(clients: dict[str, RawClient]) -> None:
    def init_producer_id(client: RawClient) -> int:
        request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000)
        return int(client.request(request, 4).error_code)

    # idempotent producers: IDEMPOTENT_WRITE on the cluster or WRITE on some topic (Kafka 3.x)
    assert init_producer_id(clients["alice"]) == ErrorCode.NONE
    assert init_producer_id(clients["bob"]) == CLUSTER_DENIED
    assert clients["bob"].request(DescribeLogDirsRequest(topics=None), 3).error_code == CLUSTER_DENIED
    assert clients["admin"].request(DescribeLogDirsRequest(topics=None), 3).error_code == ErrorCode.NONE


def test_transactions(clients: dict[str, RawClient]) -> None:
    """The transaction family, as Kafka's KafkaApis: WRITE (DESCRIBE to look) on the transactional id,
    WRITE on the topics a transaction adds, READ on the group whose offsets it commits."""
    alice, bob, admin = clients["alice"], clients["bob"], clients["admin"]

    def find(client: RawClient, transactional_id: str) -> int:
        request = FindCoordinatorRequest(key=transactional_id, key_type=1)
        return int(client.request(request, 3).error_code)

    def init(client: RawClient, transactional_id: str) -> tuple[int, int, int]:
        request = InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=60000)
        for _ in range(50):  # the coordinator may still be loading __transaction_state
            answer = client.request(request, 4)
            if answer.error_code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR):
                break
            time.sleep(0.2)
        return int(answer.error_code), answer.producer_id, answer.producer_epoch

    def add(client: RawClient, transactional_id: str, producer: tuple[int, int], *topics: str) -> set[int]:
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer[0],
            v3_and_below_producer_epoch=producer[1],
            v3_and_below_topics=[AddPartitionsToTxnTopicData(name=t, partitions=[0]) for t in topics],
        )
        answer = client.request(request, 3)
        return {
            p.partition_error_code
            for t in answer.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }

    def end(client: RawClient, transactional_id: str, producer: tuple[int, int]) -> int:
        request = EndTxnRequest(
            transactional_id=transactional_id,
            producer_id=producer[0],
            producer_epoch=producer[1],
            committed=True,
        )
        return int(client.request(request, 3).error_code)

    for _ in range(50):
        if find(alice, "alice-tx") != ErrorCode.COORDINATOR_NOT_AVAILABLE:
            break
        time.sleep(0.2)
    assert find(alice, "alice-tx") == ErrorCode.NONE
    assert find(bob, "alice-tx") == TXN_DENIED
    assert find(alice, "other-tx") == TXN_DENIED

    code, producer_id, epoch = init(alice, "alice-tx")
    assert code == ErrorCode.NONE and producer_id >= 0
    assert init(bob, "alice-tx")[0] == TXN_DENIED
    assert init(alice, "other-tx")[0] == TXN_DENIED
    producer = (producer_id, epoch)

    # bob may not use alice's id; alice may not add a topic she cannot write (the rest not attempted)
    assert add(bob, "alice-tx", producer, "orders") == {TXN_DENIED}
    assert add(alice, "alice-tx", producer, "orders", "alice-secret") == {
        TOPIC_DENIED,
        ErrorCode.OPERATION_NOT_ATTEMPTED,
    }
    assert add(alice, "alice-tx", producer, "orders") == {ErrorCode.NONE}
    offsets = AddOffsetsToTxnRequest(
        transactional_id="alice-tx", producer_id=producer_id, producer_epoch=epoch, group_id="bobs-group"
    )
    assert alice.request(offsets, 3).error_code == GROUP_DENIED
    bob_offsets = AddOffsetsToTxnRequest(
        transactional_id="alice-tx", producer_id=producer_id, producer_epoch=epoch, group_id="alice-g"
    )
    assert bob.request(bob_offsets, 3).error_code == TXN_DENIED

    # a transactional Produce needs WRITE on its transactional id before anything else
    batch = build_record_batch(
        [Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=b"t")],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=0,
        is_transactional=True,
    )
    produce = ProduceRequest(
        transactional_id="alice-tx",
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name="orders", partition_data=[PartitionProduceData(index=0, records=batch)])
        ],
    )
    assert bob.request(produce, 9).responses[0].partition_responses[0].error_code == TXN_DENIED
    assert alice.request(produce, 9).responses[0].partition_responses[0].error_code == ErrorCode.NONE

    described = DescribeTransactionsRequest(transactional_ids=["alice-tx"])
    assert bob.request(described, 0).transaction_states[0].error_code == TXN_DENIED
    assert alice.request(described, 0).transaction_states[0].error_code == ErrorCode.NONE
    listed = ListTransactionsRequest(state_filters=[], producer_id_filters=[])
    assert [t.transactional_id for t in bob.request(listed, 0).transaction_states] == []
    assert "alice-tx" in [t.transactional_id for t in alice.request(listed, 0).transaction_states]
    producers = DescribeProducersRequest(topics=[TopicRequest(name="orders", partition_indexes=[0])])
    assert bob.request(producers, 0).topics[0].partitions[0].error_code == TOPIC_DENIED
    assert alice.request(producers, 0).topics[0].partitions[0].error_code == ErrorCode.NONE

    assert end(bob, "alice-tx", producer) == TXN_DENIED
    assert end(alice, "alice-tx", producer) == ErrorCode.NONE
    # the markers are the coordinator's to write: CLUSTER_ACTION on the cluster
    markers = WriteTxnMarkersRequest(
        markers=[
            WritableTxnMarker(
                producer_id=producer_id,
                producer_epoch=epoch,
                transaction_result=False,
                topics=[WritableTxnMarkerTopic(name="orders", partition_indexes=[0])],
                coordinator_epoch=0,
            )
        ]
    )
    refused = alice.request(markers, 1).markers[0].topics[0].partitions[0].error_code
    assert refused == CLUSTER_DENIED
    assert admin.request(described, 0).transaction_states[0].error_code == ErrorCode.NONE
