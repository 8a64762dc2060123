"""Produce and Fetch requests for handler-level tests, and what a consumer would read from a response."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from odradek.protocol.messages.fetch import (
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    PartitionData,
)
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder, iter_record_batches
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.support.handler_services import HandlerBroker
from tests.unit.storage.helpers import batch, marker

#: Fetch by topic name, flexible, with sessions and isolation levels (v13+ names topics by id).
FETCH_VERSION = 12
PRODUCE_VERSION = 9
PARTITION_MAX_BYTES = 1 << 20
TopicPartitionKey = tuple[str, int]


async def produce(broker: HandlerBroker, topic: str, partition: int, *values: bytes) -> int:
    """Append `values` as one batch through the Produce handler (acks=1); the batch's base offset."""
    builder = RecordBatchBuilder(0)
    for value in values:
        builder.append(1_700_000_000_000, None, value)
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=builder.build())]
            )
        ],
    )
    response = await broker.call(request, PRODUCE_VERSION)
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == 0, answer
    return int(answer.base_offset)


def fetch_request(
    offsets: Mapping[TopicPartitionKey, int],
    *,
    session_id: int = 0,
    session_epoch: int = -1,
    forgotten: Sequence[TopicPartitionKey] = (),
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    max_bytes: int = 50 << 20,
    isolation_level: int = 0,
) -> FetchRequest:
    """A consumer's Fetch of `offsets` ({(topic, partition): fetch offset}), in request order."""
    topics: dict[str, list[FetchPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=PARTITION_MAX_BYTES)
        )
    forgotten_topics: dict[str, list[int]] = {}
    for topic, partition in forgotten:
        forgotten_topics.setdefault(topic, []).append(partition)
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=[FetchTopic(topic=t, partitions=p) for t, p in topics.items()],
        forgotten_topics_data=[ForgottenTopic(topic=t, partitions=p) for t, p in forgotten_topics.items()],
    )


def answered(response: FetchResponse) -> dict[TopicPartitionKey, PartitionData]:
    """The partitions a Fetch response answers, by (topic, partition)."""
    return {(t.topic, p.partition_index): p for t in response.responses for p in t.partitions}


def consumed(data: PartitionData, fetch_offset: int = 0) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every data record a consumer shows from `data`, from `fetch_offset` on.

    Control batches (transaction markers) are never shown; neither are the records of an aborted
    transaction: a batch of a producer listed in `aborted_transactions` at or after its first offset,
    up to that producer's abort marker (as Kafka's consumers filter with read_committed)."""
    records = bytes(data.records or b"")
    aborted = {a.producer_id: a.first_offset for a in data.aborted_transactions or []}
    shown: list[tuple[int, bytes | None]] = []
    for record_batch in iter_record_batches(records):
        first = aborted.get(record_batch.producer_id)
        if record_batch.is_control:
            if first is not None and record_batch.base_offset >= first:
                del aborted[record_batch.producer_id]  # the abort marker ends the aborted transaction
            continue
        if record_batch.is_transactional and first is not None and record_batch.base_offset >= first:
            continue
        shown.extend((r.offset, r.value) for r in record_batch.records if r.offset >= fetch_offset)
    return shown


def append_transactional(
    broker: HandlerBroker, topic: str, partition: int, producer_id: int, sequence: int, *values: bytes
) -> int:
    """Append a transactional batch straight to the log (no transaction coordinator serves Produce for
    it), as a transactional producer's would be; the batch's base offset. Waiting fetches are woken."""
    data = batch(
        list(values), producer_id=producer_id, producer_epoch=0, base_sequence=sequence, transactional=True
    )
    result = broker.log(topic, partition).append(data)
    broker.services.appends.notify(TopicPartition(topic, partition))
    return int(result.base_offset)


def end_transaction(broker: HandlerBroker, topic: str, partition: int, producer_id: int, commit: bool) -> int:
    """Append the COMMIT or ABORT marker a transaction coordinator would write; the marker's offset."""
    result = broker.log(topic, partition).append(marker(commit, producer_id), origin=AppendOrigin.COORDINATOR)
    broker.services.appends.notify(TopicPartition(topic, partition))
    return int(result.base_offset)
