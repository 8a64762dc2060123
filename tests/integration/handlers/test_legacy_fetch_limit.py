"""Fetch v0-v2 treat partition_max_bytes as a hard limit, as Kafka did before KIP-74 (Fetch v3): the
message set is cut at that many bytes, so a message larger than the limit arrives partial and the
client knows to report it or to ask again with more. Before, a 100-byte limit returned a whole
1,005-byte batch (the "at least one whole batch" rule of v3+ applied to every version)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Record, build_record_batch, decode_message_set, iter_record_batches
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

LIMIT = 100
VALUE = b"x" * 930  # one record: a 1,005-byte RecordBatch v2 with its key and header


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(shared_broker.port) as raw:
        yield raw


@pytest.mark.parametrize("version", [0, 1, 2])
def test_legacy_fetch_returns_at_most_partition_max_bytes_a_partial_message(
    client: RawClient, version: int
) -> None:
    topic = f"legacy-limit-v{version}"
    stored = _produce(client, topic, [VALUE])
    assert stored > 1000

    records = _fetch(client, topic, version, LIMIT)

    assert len(records) == LIMIT
    partial = decode_message_set(records)
    assert (partial.batches, partial.truncated) == ([], True)
    whole = decode_message_set(_fetch(client, topic, version, 1 << 20))
    assert [r.value for r in whole.records] == [VALUE] and not whole.truncated


def test_legacy_fetch_cuts_every_partition_not_only_the_first(client: RawClient) -> None:
    """A later partition whose first message is over its limit gets a partial message too: an empty
    answer would leave an old client fetching the same offset forever, never told the message is too
    large."""
    topics = ["legacy-limit-first", "legacy-limit-second"]
    for topic in topics:
        _produce(client, topic, [VALUE])
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        topics=[
            FetchTopic(
                topic=t, partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=LIMIT)]
            )
            for t in topics
        ],
    )

    response = client.request(request, 2)

    sizes = [(t.topic, p.error_code, len(p.records or b"")) for t in response.responses for p in t.partitions]
    assert sizes == [(topic, ErrorCode.NONE, LIMIT) for topic in topics]


def test_fetch_v3_still_returns_a_whole_first_batch_past_the_limit(client: RawClient) -> None:
    topic = "legacy-limit-v3"
    _produce(client, topic, [VALUE])
    assert [r.value for r in decode_message_set(_fetch(client, topic, 3, LIMIT)).records] == [VALUE]
    batches = list(iter_record_batches(_fetch(client, topic, 4, LIMIT)))
    assert [r.value for batch in batches for r in batch.records] == [VALUE]


def _produce(client: RawClient, topic: str, values: list[bytes]) -> int:
    response = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 1)
    assert response.topics[0].error_code == ErrorCode.NONE
    now = int(time.time() * 1000)
    size = 0
    for value in values:  # one batch each
        batch = build_record_batch([Record(offset=0, timestamp=now, key=b"key", value=value)])
        size = len(batch)
        request = ProduceRequest(
            acks=-1,
            timeout_ms=5000,
            topic_data=[
                TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])
            ],
        )
        answer = client.request(request, 3).responses[0].partition_responses[0]
        assert answer.error_code == ErrorCode.NONE
    return size


def _fetch(client: RawClient, topic: str, version: int, limit: int, offset: int = 0) -> bytes:
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=limit)],
            )
        ],
    )
    [partition] = client.request(request, version).responses[0].partitions
    assert partition.error_code == ErrorCode.NONE
    return bytes(partition.records or b"")
