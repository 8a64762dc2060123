"""The share coordinator over the wire on a single node: FindCoordinator key type SHARE and its key
validation, the five *ShareGroupState RPCs, hostile input, and state kept across a SIGKILL."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import delete_share_group_state as delete
from odradek.protocol.messages import initialize_share_group_state as init
from odradek.protocol.messages import read_share_group_state as read
from odradek.protocol.messages import read_share_group_state_summary as summary
from odradek.protocol.messages import write_share_group_state as write
from odradek.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(90)
E = ErrorCode
SHARE_KEY = 2
SETTINGS = {"offsets.topic.num.partitions": "1", "share.coordinator.state.topic.num.partitions": "3"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("share") / "data", SETTINGS).start()
    try:
        with RawClient(process.port) as client:  # a share key's lookup makes __share_group_state
            wait_for_coordinator(client, SharePartitionKey("g", uuid.UUID(int=1), 0).coordinator_key)
        yield process
    finally:
        process.stop()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.port) as raw:
        yield raw


def topic_id(client: RawClient, name: str) -> uuid.UUID:
    """The topic's id (created on first use by Metadata)."""
    response = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=name)]), 12)
    (topic,) = response.topics
    assert topic.error_code == E.NONE
    if topic.topic_id == uuid.UUID(int=0):  # just created: ask again
        (topic,) = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=name)]), 12).topics
    return topic.topic_id


def initialize(
    client: RawClient, group: str, tid: uuid.UUID, partition: int, state_epoch: int, start: int
) -> int:
    response = client.request(
        init.InitializeShareGroupStateRequest(
            group_id=group,
            topics=[
                init.InitializeStateData(
                    topic_id=tid,
                    partitions=[
                        init.PartitionData(partition=partition, state_epoch=state_epoch, start_offset=start)
                    ],
                )
            ],
        ),
        0,
    )
    return int(response.results[0].partitions[0].error_code)


def write_state(
    client: RawClient,
    group: str,
    tid: uuid.UUID,
    partition: int,
    leader_epoch: int,
    start: int,
    batches: list[tuple[int, int, int, int]],
    state_epoch: int = 0,
) -> int:
    response = client.request(
        write.WriteShareGroupStateRequest(
            group_id=group,
            topics=[
                write.WriteStateData(
                    topic_id=tid,
                    partitions=[
                        write.PartitionData(
                            partition=partition,
                            state_epoch=state_epoch,
                            leader_epoch=leader_epoch,
                            start_offset=start,
                            delivery_complete_count=-1,
                            state_batches=[
                                write.StateBatch(
                                    first_offset=f, last_offset=last, delivery_state=s, delivery_count=c
                                )
                                for f, last, s, c in batches
                            ],
                        )
                    ],
                )
            ],
        ),
        1,
    )
    return int(response.results[0].partitions[0].error_code)


def read_state(
    client: RawClient, group: str, tid: uuid.UUID, partition: int, leader_epoch: int
) -> read.PartitionResult:
    response = client.request(
        read.ReadShareGroupStateRequest(
            group_id=group,
            topics=[
                read.ReadStateData(
                    topic_id=tid,
                    partitions=[read.PartitionData(partition=partition, leader_epoch=leader_epoch)],
                )
            ],
        ),
        0,
    )
    result: read.PartitionResult = response.results[0].partitions[0]
    return result


def wait_for_coordinator(client: RawClient, key: str) -> int:
    """FindCoordinator for a share key until it names a broker (the topic is made on first use)."""
    deadline = time.monotonic() + 30
    while True:
        error, node = find(client, key)
        if error == E.NONE or time.monotonic() > deadline:
            assert error == E.NONE
            return node
        time.sleep(0.1)


def find(client: RawClient, key: str, version: int = 6) -> tuple[int, int]:
    response = client.request(FindCoordinatorRequest(key_type=SHARE_KEY, coordinator_keys=[key]), version)
    (answer,) = response.coordinators
    return int(answer.error_code), int(answer.node_id)


def test_find_coordinator_share_key_names_this_broker(client: RawClient) -> None:
    key = SharePartitionKey("billing", topic_id(client, "orders"), 0)
    assert find(client, key.coordinator_key) == (E.NONE, 1)


@pytest.mark.parametrize(
    "key",
    [
        "",
        "billing",
        "billing:orders:0",  # a topic name, not an id
        ":AAAAAAAAAAAAAAAAAAAAAA:0",  # no group
        "billing:AAAAAAAAAAAAAAAAAAAAAA:zero",
        "billing:AAAAAAAAAAAAAAAAAAAAAA:99999999999",
        "x" * 1_000_000 + ":AAAAAAAAAAAAAAAAAAAAAA:0",  # longer than a record key holds
    ],
)
def test_find_coordinator_refuses_malformed_share_keys(client: RawClient, key: str) -> None:
    assert find(client, key)[0] == E.INVALID_REQUEST
    # ... and the broker serves on
    assert (
        find(client, f"g:{SharePartitionKey('g', uuid.uuid4(), 0).coordinator_key.split(':')[1]}:0")[0]
        == E.NONE
    )


def test_find_coordinator_before_v6_knows_no_share_key_type(client: RawClient) -> None:
    assert find(client, "g:AAAAAAAAAAAAAAAAAAAAAA:0", version=5)[0] == E.INVALID_REQUEST


def test_state_is_initialized_written_read_summarized_and_deleted(client: RawClient) -> None:
    tid = topic_id(client, "payments")
    assert initialize(client, "g1", tid, 0, 0, 0) == E.NONE
    assert write_state(client, "g1", tid, 0, 0, 0, [(0, 4, 2, 1), (5, 9, 0, 2)]) == E.NONE
    state = read_state(client, "g1", tid, 0, 0)
    assert (state.error_code, state.state_epoch, state.start_offset) == (E.NONE, 0, 0)
    assert [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in state.state_batches
    ] == [
        (0, 4, 2, 1),
        (5, 9, 0, 2),
    ]
    response = client.request(
        summary.ReadShareGroupStateSummaryRequest(
            group_id="g1",
            topics=[
                summary.ReadStateSummaryData(
                    topic_id=tid, partitions=[summary.PartitionData(partition=0, leader_epoch=0)]
                )
            ],
        ),
        1,
    )
    result = response.results[0].partitions[0]
    assert (result.error_code, result.start_offset, result.state_epoch) == (E.NONE, 0, 0)
    response = client.request(
        delete.DeleteShareGroupStateRequest(
            group_id="g1",
            topics=[delete.DeleteStateData(topic_id=tid, partitions=[delete.PartitionData(partition=0)])],
        ),
        0,
    )
    assert response.results[0].partitions[0].error_code == E.NONE
    assert read_state(client, "g1", tid, 0, 0).error_code == E.INVALID_REQUEST  # never initialised now


def test_fenced_epochs_and_hostile_input_get_kafkas_errors_and_the_broker_serves_on(
    client: RawClient,
) -> None:
    tid = topic_id(client, "refunds")
    assert initialize(client, "g2", tid, 0, 1, 0) == E.NONE
    assert read_state(client, "g2", tid, 0, 7).error_code == E.NONE  # a new leader at epoch 7
    assert write_state(client, "g2", tid, 0, 6, 0, []) == E.FENCED_LEADER_EPOCH
    assert write_state(client, "g2", tid, 0, 7, 0, [], state_epoch=0) == E.FENCED_STATE_EPOCH
    assert initialize(client, "g2", tid, 0, 0, 0) == E.FENCED_STATE_EPOCH
    assert (
        write_state(client, "g2", tid, 0, 7, 0, [(0, 1, 3, 1)], state_epoch=1) == E.INVALID_REQUEST
    )  # state 3
    assert initialize(client, "g2", uuid.uuid4(), 0, 0, 0) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert initialize(client, "g2", tid, 99, 0, 0) == E.UNKNOWN_TOPIC_OR_PARTITION
    assert initialize(client, "g2", tid, -1, 0, 0) == E.INVALID_REQUEST
    assert initialize(client, "x" * 40_000, tid, 0, 0, 0) == E.INVALID_REQUEST  # too long for a record key
    assert write_state(client, "g2", tid, 0, 7, 0, [(0, 1, 2, 1)], state_epoch=1) == E.NONE


def test_acknowledged_state_survives_a_sigkill(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        tid = topic_id(client, "ledger")
        assert initialize(client, "g3", tid, 0, 2, 100) == E.NONE
        for offset in range(100, 110):
            assert (
                write_state(client, "g3", tid, 0, 3, offset, [(offset, offset, 2, 1)], state_epoch=2)
                == E.NONE
            )
    broker.kill()
    broker.start()
    with RawClient(broker.port) as client:
        state = read_state(client, "g3", tid, 0, 3)
        assert (state.error_code, state.state_epoch, state.start_offset) == (E.NONE, 2, 109)
        assert [(b.first_offset, b.last_offset, b.delivery_state) for b in state.state_batches] == [
            (109, 109, 2)
        ]


def test_share_state_topic_is_internal_no_client_grows_or_writes_it(client: RawClient) -> None:
    """Adding partitions would move every key to another partition (keys hash over the count)."""
    response = client.request(
        CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name="__share_group_state", count=10, assignments=None)],
            timeout_ms=10_000,
            validate_only=False,
        ),
        2,
    )
    assert response.results[0].error_code == E.INVALID_REQUEST
    (topic,) = client.request(
        MetadataRequest(topics=[MetadataRequestTopic(name="__share_group_state")]), 12
    ).topics
    assert topic.is_internal


def test_a_request_naming_many_partitions_is_answered_for_each_in_order(client: RawClient) -> None:
    """Steps run in windows of 64: every partition of every topic still gets its own answer, in place."""
    known = topic_id(client, "payments")
    unknown = uuid.uuid4()
    response = client.request(
        init.InitializeShareGroupStateRequest(
            group_id="many",
            topics=[
                init.InitializeStateData(
                    topic_id=tid,
                    partitions=[
                        init.PartitionData(partition=p, state_epoch=0, start_offset=0) for p in parts
                    ],
                )
                for tid, parts in ((unknown, range(150)), (known, [0]), (unknown, range(150, 300)))
            ],
        ),
        0,
    )
    answers = [(r.topic_id, [(p.partition, p.error_code) for p in r.partitions]) for r in response.results]
    assert answers == [
        (unknown, [(p, E.UNKNOWN_TOPIC_OR_PARTITION) for p in range(150)]),
        (known, [(0, E.NONE)]),
        (unknown, [(p, E.UNKNOWN_TOPIC_OR_PARTITION) for p in range(150, 300)]),
    ]


def test_an_empty_group_id_is_answered_with_no_results_as_kafka_4_4_answers_it(client: RawClient) -> None:
    tid = topic_id(client, "refunds")
    request = init.InitializeShareGroupStateRequest(
        group_id="",
        topics=[
            init.InitializeStateData(
                topic_id=tid, partitions=[init.PartitionData(partition=0, state_epoch=0, start_offset=0)]
            )
        ],
    )
    assert client.request(request, 0).results == []


def test_a_refused_read_carries_kafkas_field_defaults(client: RawClient) -> None:
    """Kafka 4.4 answers a refused read with state epoch 0 and start offset 0 (the fields' defaults)."""
    refused = read_state(client, "never-initialized", topic_id(client, "refunds"), 0, 0)
    assert (refused.error_code, refused.state_epoch, refused.start_offset, refused.state_batches) == (
        E.INVALID_REQUEST,
        0,
        0,
        [],
    )


def test_a_single_node_creates_the_share_state_topic_on_first_use_not_at_start(tmp_path: Path) -> None:
    """As Kafka 4.x: a broker whose clients never use share groups has no `__share_group_state` (its 50
    partitions made at every first start showed in every topic listing, Kafka 3.9's tools' too)."""
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        with RawClient(broker.port) as client:
            listed = client.request(MetadataRequest(topics=None), 12)
            assert "__share_group_state" not in [t.name for t in listed.topics]
            key = SharePartitionKey("g", topic_id(client, "orders"), 0).coordinator_key
            assert wait_for_coordinator(client, key) == 1
            listed = client.request(MetadataRequest(topics=None), 12)
            assert "__share_group_state" in [t.name for t in listed.topics]
    finally:
        broker.stop()
