"""Broker settings that were accepted without effect now do what Kafka's do: broker.rack is what
Metadata and DescribeCluster report, fetch.max.bytes caps a Fetch response whatever the client asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from odradek.protocol.messages.describe_cluster import DescribeClusterRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest
from odradek.protocol.records import iter_record_batches
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

RACK = "rack-b"
FETCH_MAX_BYTES = 1024  # Kafka's lowest allowed value
BATCH_VALUE = b"v" * 600  # one record batch each, so two never fit in 1 KiB


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data: Path = tmp_path_factory.mktemp("settings") / "data"
    process = BrokerProcess(data, {"broker.rack": RACK, "fetch.max.bytes": str(FETCH_MAX_BYTES)}).start()
    try:
        yield process
    finally:
        process.stop()


def test_broker_rack_is_reported_in_metadata_and_describe_cluster(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        metadata = client.request(MetadataRequest(topics=[]), 1)
        cluster = client.request(DescribeClusterRequest(), 0)
    assert [(b.node_id, b.rack) for b in metadata.brokers] == [(1, RACK)]
    assert [(b.broker_id, b.rack) for b in cluster.brokers] == [(1, RACK)]


def test_fetch_max_bytes_caps_a_fetch_response_below_what_the_client_asks(broker: BrokerProcess) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for _ in range(4):
        producer.produce("capped", value=BATCH_VALUE)
        assert producer.flush(10) == 0
    fetch = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=10 << 20,
        topics=[
            FetchTopic(
                topic="capped",
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=10 << 20)],
            )
        ],
    )
    with RawClient(broker.port) as client:
        response = client.request(fetch, 4)
    [partition] = response.responses[0].partitions
    batches = list(iter_record_batches(partition.records or b""))
    assert partition.high_watermark == 4
    assert len(batches) == 1  # a second would pass fetch.max.bytes; the first always comes whole
