"""Produce v3+ carries exactly one record batch per partition, checked as Kafka's
ProduceRequest.validateRecords checks it: no whole batch, or a second whole one, is INVALID_RECORD for
that partition and nothing of it is appended; ZSTD before v7 is UNSUPPORTED_COMPRESSION_TYPE. Before,
two batches for one partition were both appended, and an empty partition was CORRUPT_MESSAGE."""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Compression, Record, RecordBatchBuilder, build_message_set
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)

TOPIC = "one-batch"


def batch(*values: bytes, compression: Compression = Compression.NONE) -> bytes:
    builder = RecordBatchBuilder(0, compression=compression)
    for value in values:
        builder.append(1_700_000_000_000, None, value)
    return builder.build()


TWO = batch(b"a") + batch(b"b", b"c")
CASES = [
    # (what, records, version, error code, records appended)
    ("one batch", batch(b"a", b"b"), 3, ErrorCode.NONE, 2),
    ("two batches", TWO, 3, ErrorCode.INVALID_RECORD, 0),
    ("two batches, flexible version", TWO, 9, ErrorCode.INVALID_RECORD, 0),
    ("two batches, newest version by name", TWO, 12, ErrorCode.INVALID_RECORD, 0),
    ("no batch", b"", 3, ErrorCode.INVALID_RECORD, 0),
    ("a batch cut short is no batch", batch(b"a")[:-1], 9, ErrorCode.INVALID_RECORD, 0),
    # A fragment shorter than a batch is not a second batch (Kafka's iterator stops before it): the
    # append itself refuses it.
    ("one batch and a fragment", batch(b"a") + batch(b"b")[:20], 9, ErrorCode.CORRUPT_MESSAGE, 0),
    (
        "zstd before v7",
        batch(b"a", compression=Compression.ZSTD),
        6,
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        0,
    ),
    ("zstd from v7", batch(b"a", compression=Compression.ZSTD), 7, ErrorCode.NONE, 1),
]


@pytest.mark.parametrize(
    ("records", "version", "error_code", "appended"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
async def test_produce_v3_takes_exactly_one_record_batch_per_partition(
    handler_broker: HandlerBroker, records: bytes, version: int, error_code: ErrorCode, appended: int
) -> None:
    await handler_broker.create_topic(TOPIC, partitions=2)
    good = batch(b"other")
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=TOPIC,
                partition_data=[
                    PartitionProduceData(index=0, records=records),
                    PartitionProduceData(index=1, records=good),
                ],
            )
        ],
    )

    response = await handler_broker.call(request, version)

    answers = {p.index: p for p in response.responses[0].partition_responses}
    assert answers[0].error_code == error_code, answers[0].error_message
    assert answers[1].error_code == ErrorCode.NONE  # the request's other partitions are appended
    assert handler_broker.log(TOPIC, 0).log_end_offset == appended
    assert handler_broker.log(TOPIC, 1).log_end_offset == 1
    if error_code == ErrorCode.INVALID_RECORD and version >= 8:
        assert answers[0].error_message is not None
        assert f"Produce requests with version {version}" in answers[0].error_message


async def test_legacy_produce_may_still_carry_several_message_sets(handler_broker: HandlerBroker) -> None:
    """The rule starts with v3 (Kafka leaves older versions as they were, for old clients)."""
    await handler_broker.create_topic(TOPIC)
    records = b"".join(
        build_message_set([Record(offset=0, timestamp=1_700_000_000_000, key=None, value=v)], magic=1)
        for v in (b"a", b"b")
    )
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(name=TOPIC, partition_data=[PartitionProduceData(index=0, records=records)])
        ],
    )
    response = await handler_broker.call(request, 2)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert handler_broker.log(TOPIC).log_end_offset == 2
