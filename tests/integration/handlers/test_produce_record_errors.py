"""Produce v8+ per-record errors (KIP-467). A batch with records a topic cannot take still fails whole,
but the response names those records in `record_errors` (their index in the batch, and why) and says
what happened in `error_message`, so a client can tell them from the records that only shared their
batch (librdkafka test 0011). Before, the 10 keyless records of a 100-record batch to a compacted topic
made all 100 fail with INVALID_RECORD and no detail."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Record, build_record_batch
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

RECORDS = 100
KEYLESS = [3, 11, 12, 29, 40, 56, 57, 70, 88, 99]
HOUR_MS = 3_600_000


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(shared_broker.port) as raw:
        yield raw


@pytest.mark.parametrize("version", [8, 9, 11])
def test_keyless_records_in_a_compacted_topic_are_named_in_record_errors(
    client: RawClient, version: int
) -> None:
    topic = f"kip467-compacted-v{version}"
    _create(client, topic, {"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    records = [
        Record(offset=i, timestamp=now, key=None if i in KEYLESS else b"k%d" % i, value=b"v%d" % i)
        for i in range(RECORDS)
    ]

    answer = _produce_one(client, topic, build_record_batch(records), version)

    assert answer.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == KEYLESS
    assert all("no key" in (e.batch_index_error_message or "") for e in answer.record_errors)
    assert answer.error_message is not None and "10 of 100 records" in answer.error_message
    assert _log_end_offset(client, topic) == 0  # the whole batch was refused


def test_records_out_of_the_timestamp_bounds_are_named_in_record_errors(client: RawClient) -> None:
    topic = "kip467-timestamps"
    _create(client, topic, {"message.timestamp.after.max.ms": str(HOUR_MS)})
    now = int(time.time() * 1000)
    late = {4, 7}
    records = [
        Record(offset=i, timestamp=now + 2 * HOUR_MS if i in late else now, key=None, value=b"v")
        for i in range(10)
    ]

    answer = _produce_one(client, topic, build_record_batch(records), 9)

    assert answer.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in answer.record_errors] == sorted(late)
    assert all("out of range" in (e.batch_index_error_message or "") for e in answer.record_errors)
    assert _log_end_offset(client, topic) == 0


def _create(client: RawClient, topic: str, configs: dict[str, str]) -> None:
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=topic,
                num_partitions=1,
                replication_factor=1,
                assignments=[],
                configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
            )
        ],
        timeout_ms=10000,
    )
    response = client.request(request, 5)
    assert [t.error_code for t in response.topics] == [ErrorCode.NONE]


def _produce_one(client: RawClient, topic: str, batch: bytes, version: int) -> Any:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])
        ],
    )
    response = client.request(request, version)
    return response.responses[0].partition_responses[0]


def _log_end_offset(client: RawClient, topic: str) -> int:
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
        ],
    )
    answer = client.request(request, 1).topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    return int(answer.offset)
