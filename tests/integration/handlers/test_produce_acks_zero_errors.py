"""A Produce with acks=0 has no response to carry an error, so when any partition fails the broker
closes the connection (Kafka's KafkaApis.handleProduceRequest): the producer sees the disconnect and
refreshes its metadata. The partitions that did not fail are still appended. Before, a failed acks=0
produce was silent: the producer went on sending into the void."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

TOPIC = "acks-zero"


@pytest.fixture(scope="module")
def port(shared_broker: BrokerProcess) -> Iterator[int]:
    with RawClient(shared_broker.port) as client:
        request = CreateTopicsRequest(
            topics=[CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)], timeout_ms=10_000
        )
        assert [t.error_code for t in client.request(request, 5).topics] == [ErrorCode.NONE]
    yield shared_broker.port


def test_acks_zero_produce_to_an_unknown_topic_closes_the_connection(port: int) -> None:
    with RawClient(port) as client:
        client.send(_produce({("no-such-topic", 0): _batch(b"lost")}), 9)
        assert client.wait_closed()


def test_acks_zero_produce_with_one_failed_partition_closes_the_connection_after_appending_the_rest(
    port: int,
) -> None:
    before = _log_end_offset(port, 0)
    with RawClient(port) as client:
        # Partition 1 gets two batches, which v3+ refuses (INVALID_RECORD); partition 0 is appended.
        client.send(_produce({(TOPIC, 0): _batch(b"kept"), (TOPIC, 1): _batch(b"x") + _batch(b"y")}), 9)
        assert client.wait_closed()
    assert _log_end_offset(port, 0) == before + 1
    assert _log_end_offset(port, 1) == 0


def test_acks_zero_stray_transactional_produce_refused_closes_the_connection(port: int) -> None:
    """A transactional batch of a producer with no ongoing transaction is refused (INVALID_TXN_STATE);
    with acks=0, Kafka's error response for the request is none at all, so it closes the connection."""
    builder = RecordBatchBuilder(0, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    builder.append(1_700_000_000_000, None, b"in a transaction")
    before = _log_end_offset(port, 0)
    with RawClient(port) as client:
        client.send(_produce({(TOPIC, 0): builder.build()}), 9)
        assert client.wait_closed()
    assert _log_end_offset(port, 0) == before


def test_acks_zero_produce_that_succeeds_keeps_the_connection(port: int) -> None:
    with RawClient(port) as client:
        client.send(_produce({(TOPIC, 0): _batch(b"fine")}), 9)
        assert client.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE


def _batch(value: bytes) -> bytes:
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, value)
    return builder.build()


def _produce(records: dict[tuple[str, int], bytes]) -> ProduceRequest:
    topics: dict[str, list[PartitionProduceData]] = {}
    for (topic, partition), data in records.items():
        topics.setdefault(topic, []).append(PartitionProduceData(index=partition, records=data))
    return ProduceRequest(
        acks=0,
        timeout_ms=1000,
        topic_data=[TopicProduceData(name=t, partition_data=p) for t, p in topics.items()],
    )


def _log_end_offset(port: int, partition: int) -> int:
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=TOPIC, partitions=[ListOffsetsPartition(partition_index=partition, timestamp=-1)]
            )
        ],
    )
    with RawClient(port) as client:
        answer = client.request(request, 1).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    return int(answer.offset)
