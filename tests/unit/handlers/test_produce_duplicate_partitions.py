"""A partition named twice in one Produce: Kafka keys the request by topic partition (a map), so only
the last records given for it are appended, and it is answered once; a topic named twice is answered
as one. Before, both batches were appended and the partition answered twice."""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder, build_message_set, iter_record_batches
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)

TOPIC = "twice"


def batch(records: int) -> bytes:
    builder = RecordBatchBuilder(0)
    for i in range(records):
        builder.append(1_700_000_000_000, None, b"v%d" % i)
    return builder.build()


@pytest.mark.parametrize("version", [2, 9])
async def test_a_partition_named_twice_appends_only_its_last_records(
    handler_broker: HandlerBroker, version: int
) -> None:
    await handler_broker.create_topic(TOPIC, partitions=2)
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=TOPIC,
                partition_data=[
                    PartitionProduceData(index=0, records=batch(2)),
                    PartitionProduceData(index=1, records=batch(1)),
                ],
            ),
            TopicProduceData(name=TOPIC, partition_data=[PartitionProduceData(index=0, records=batch(3))]),
        ],
    )
    if version < 3:  # the same records as message sets
        for topic in request.topic_data:
            for data in topic.partition_data:
                records = [r for b in iter_record_batches(data.records) for r in b.records]
                data.records = build_message_set(records, magic=1)

    response = await handler_broker.call(request, version)

    assert [
        (t.name, [(p.index, p.error_code) for p in t.partition_responses]) for t in response.responses
    ] == [(TOPIC, [(0, ErrorCode.NONE), (1, ErrorCode.NONE)])]
    assert handler_broker.log(TOPIC, 0).log_end_offset == 3
    assert handler_broker.log(TOPIC, 1).log_end_offset == 1
