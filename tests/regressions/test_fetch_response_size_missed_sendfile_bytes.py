"""A Fetch response whose records went by sendfile (>= 64 KiB for a partition) declared a frame size
that left those records out, so every client misread it and the frames after it.

librdkafka reported "Invalid response size 758132016" (record bytes read as a size prefix); the
records were served from segment files with sendfile, but the size prefix counted only the bytes
encoded into the response buffer.
"""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder, iter_record_batches
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("fetch_version", [4, 11, 16])
def test_a_fetch_response_served_by_sendfile_is_framed_with_its_records(
    shared_broker: BrokerProcess, fetch_version: int
) -> None:
    topic = f"regression-sendfile-size-v{fetch_version}"
    with RawClient(shared_broker.port) as client:
        metadata = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 12)
        topic_id = metadata.topics[0].topic_id
        for batch_number in range(4):  # 4 x ~40 KiB: well past the 64 KiB sendfile threshold
            builder = RecordBatchBuilder()
            for i in range(40):
                builder.append(1_700_000_000_000 + i, b"k%d" % i, bytes([batch_number]) * 1000)
            produce = ProduceRequest(
                acks=1,
                timeout_ms=5000,
                topic_data=[
                    TopicProduceData(
                        name=topic, partition_data=[PartitionProduceData(index=0, records=builder.build())]
                    )
                ],
            )
            assert client.request(produce, 7).responses[0].partition_responses[0].error_code == 0

        fetch = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            topics=[
                FetchTopic(
                    topic=topic,
                    topic_id=topic_id,
                    partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
                )
            ],
        )
        response = client.request(fetch, fetch_version)
        [partition] = response.responses[0].partitions
        assert partition.error_code == ErrorCode.NONE
        batches = list(iter_record_batches(partition.records))
        assert [b.base_offset for b in batches] == [0, 40, 80, 120]
        assert sum(len(b.records) for b in batches) == 160
        # The connection is still in step: the next response is the next request's.
        assert client.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
