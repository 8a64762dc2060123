"""What a broker serves of a partition, taken whole so two brokers (of either kind) opening the same
log directory can be compared: the log start offset, the high watermark and last stable offset, every
batch from the log start (control batches and aborted data included, as read_uncommitted sees them,
decoded record by record: offsets, timestamps, keys, values, headers, producer ids and sequences), the
aborted transactions a read_committed fetch is told of, and the producer state DescribeProducers shows."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.records.batch import RecordBatch, iter_record_batches
from tests.support.raw_client import RawClient

EARLIEST = -2
LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
#: Fetch v11: both kinds serve it (log start offset, last stable offset, aborted transactions).
FETCH_VERSION = 11


@dataclass(frozen=True, slots=True)
class PartitionImage:
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    batches: tuple[RecordBatch, ...]
    #: (producer id, first offset) of each aborted transaction read_committed is told of.
    aborted: tuple[tuple[int, int], ...]
    #: (producer id, epoch, last sequence, last timestamp, coordinator epoch, open transaction's start).
    producers: tuple[tuple[int, int, int, int, int, int], ...]


def partition_image(host: str, port: int, topic: str, partition: int) -> PartitionImage:
    """The partition as the broker at (host, port), its leader, serves it."""
    with RawClient(port, timeout=10, host=host) as client:
        log_start = _list_offset(client, topic, partition, EARLIEST)
        high_watermark = _list_offset(client, topic, partition, LATEST)
        batches: list[RecordBatch] = []
        offset = log_start
        while offset < high_watermark:
            records, _, _ = _fetch(client, topic, partition, offset, READ_UNCOMMITTED)
            fetched = list(iter_record_batches(records))
            assert fetched, f"{topic}-{partition}: nothing served at {offset} below {high_watermark}"
            batches += fetched
            offset = fetched[-1].next_offset
        _, last_stable, aborted = _fetch(client, topic, partition, log_start, READ_COMMITTED)
        producers = _producers(client, topic, partition)
    return PartitionImage(log_start, high_watermark, last_stable, tuple(batches), aborted, producers)


def _producers(
    client: RawClient, topic: str, partition: int
) -> tuple[tuple[int, int, int, int, int, int], ...]:
    request = DescribeProducersRequest(topics=[TopicRequest(name=topic, partition_indexes=[partition])])
    [answer] = client.request(request, 0).topics[0].partitions
    assert answer.error_code == ErrorCode.NONE, f"DescribeProducers {topic}-{partition}: {answer.error_code}"
    return tuple(
        sorted(
            (
                p.producer_id,
                p.producer_epoch,
                p.last_sequence,
                p.last_timestamp,
                p.coordinator_epoch,
                p.current_txn_start_offset,
            )
            for p in answer.active_producers
        )
    )


def _list_offset(client: RawClient, topic: str, partition: int, timestamp: int) -> int:
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=READ_UNCOMMITTED,
        topics=[
            ListOffsetsTopic(
                name=topic, partitions=[ListOffsetsPartition(partition_index=partition, timestamp=timestamp)]
            )
        ],
    )
    [answer] = client.request(request, 5).topics[0].partitions
    assert answer.error_code == ErrorCode.NONE, f"ListOffsets {topic}-{partition}: {answer.error_code}"
    offset: int = answer.offset
    return offset


def _fetch(
    client: RawClient, topic: str, partition: int, offset: int, isolation_level: int
) -> tuple[bytes, int, tuple[tuple[int, int], ...]]:
    request = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 24,
        isolation_level=isolation_level,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 22)
                ],
            )
        ],
    )
    [data] = client.request(request, FETCH_VERSION).responses[0].partitions
    assert data.error_code == ErrorCode.NONE, f"Fetch {topic}-{partition} at {offset}: {data.error_code}"
    aborted = tuple((a.producer_id, a.first_offset) for a in data.aborted_transactions or [])
    return bytes(data.records or b""), data.last_stable_offset, aborted
