"""Until odradek has a transaction coordinator, transactional ids and batches are refused with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which every client treats as fatal. Before, FindCoordinator and
InitProducerId answered the retriable COORDINATOR_NOT_AVAILABLE (a transactional producer retried until
its timeout), and a transactional batch was appended, pinning the last stable offset forever so that
`read_committed` consumers stalled."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Record, build_record_batch, iter_record_batches
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

REFUSED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
TRANSACTION_KEY = 1


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(shared_broker.port) as raw:
        yield raw


@pytest.mark.parametrize("version", [1, 2, 3])
def test_find_coordinator_for_a_transactional_id_is_refused_not_retriable(
    client: RawClient, version: int
) -> None:
    response = client.request(FindCoordinatorRequest(key="txn-a", key_type=TRANSACTION_KEY), version)
    assert (response.error_code, response.node_id) == (REFUSED, -1)
    assert "transactions are not supported" in response.error_message


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batch_for_transactional_ids_is_refused_per_key(
    client: RawClient, version: int
) -> None:
    response = client.request(
        FindCoordinatorRequest(key_type=TRANSACTION_KEY, coordinator_keys=["txn-a", "txn-b"]), version
    )
    assert [(c.key, c.error_code, c.node_id) for c in response.coordinators] == [
        ("txn-a", REFUSED, -1),
        ("txn-b", REFUSED, -1),
    ]
    assert all("transactions are not supported" in (c.error_message or "") for c in response.coordinators)


def test_find_coordinator_for_a_group_still_answers_this_broker(client: RawClient) -> None:
    response = client.request(FindCoordinatorRequest(key="a-group", key_type=0), 3)
    assert (response.error_code, response.node_id) == (ErrorCode.NONE, 1)


@pytest.mark.parametrize("version", [0, 2, 3, 4, 5])
def test_init_producer_id_with_a_transactional_id_is_refused_not_retriable(
    client: RawClient, version: int
) -> None:
    request = InitProducerIdRequest(transactional_id="txn-a", transaction_timeout_ms=60000)
    response = client.request(request, version)
    assert (response.error_code, response.producer_id, response.producer_epoch) == (REFUSED, -1, -1)


def test_init_producer_id_without_a_transactional_id_still_gets_an_id(client: RawClient) -> None:
    response = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 4)
    assert response.error_code == ErrorCode.NONE and response.producer_id >= 0


def test_produce_with_a_transactional_batch_is_refused_whole_and_read_committed_is_not_stalled(
    client: RawClient,
) -> None:
    transactional_topic, plain_topic = "txn-refused-a", "txn-refused-b"
    _create_topics(client, transactional_topic, plain_topic)
    producer_id = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
    transactional = _batch(b"in-a-transaction", producer_id=producer_id.producer_id, is_transactional=True)
    request = _produce({transactional_topic: transactional, plain_topic: _batch(b"plain, same request")})
    request.transactional_id = "txn-a"

    response = client.request(request, 9)

    answers = [(t.name, p.error_code) for t in response.responses for p in t.partition_responses]
    assert answers == [(transactional_topic, REFUSED), (plain_topic, REFUSED)]
    messages = [p.error_message for t in response.responses for p in t.partition_responses]
    assert all("transactions are not supported" in (m or "") for m in messages)
    # Nothing was appended, and a later plain record is readable under read_committed at once.
    appended = client.request(_produce({transactional_topic: _batch(b"after")}), 9)
    assert appended.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert appended.responses[0].partition_responses[0].base_offset == 0
    started = time.monotonic()
    fetched = client.request(_read_committed(transactional_topic), 11).responses[0].partitions[0]
    assert time.monotonic() - started < 2  # answered with data, not after waiting out max_wait_ms
    assert (fetched.high_watermark, fetched.last_stable_offset) == (1, 1)
    values = [r.value for batch in iter_record_batches(fetched.records) for r in batch.records]
    assert values == [b"after"]


def test_produce_v3_without_a_transactional_id_but_a_transactional_batch_is_refused(
    client: RawClient,
) -> None:
    _create_topics(client, "txn-refused-c")
    response = client.request(
        _produce({"txn-refused-c": _batch(b"stray", producer_id=7, is_transactional=True)}), 3
    )
    assert response.responses[0].partition_responses[0].error_code == REFUSED


def _create_topics(client: RawClient, *names: str) -> None:
    response = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names]), 1)
    assert [(t.name, t.error_code) for t in response.topics] == [(n, ErrorCode.NONE) for n in names]


def _batch(value: bytes, producer_id: int = -1, is_transactional: bool = False) -> bytes:
    record = Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=value)
    if producer_id < 0:
        return build_record_batch([record])
    return build_record_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=is_transactional,
    )


def _produce(records_by_topic: dict[str, bytes]) -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=records)])
            for topic, records in records_by_topic.items()
        ],
    )


def _read_committed(topic: str) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=5000,
        min_bytes=1,
        isolation_level=1,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
            )
        ],
    )
