"""partition/'s entry for a Fetch's read of one partition (Kafka's ReplicaManager.readFromLog and
Partition.fetchRecords): the partition and log looked up, the formats a version cannot read, who may
fetch as a follower, and the read with the log's offsets. The client-facing refusal before it and the
wire answer after it are the handler's (handlers/_common/fetch_reads.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.partition.fetch_sessions import CachedPartition
from odradek.partition.partition_read import FetchParams, LogReadResult, read_from_log
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.fetch import FetchIsolation
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.support.handler_services import LISTENER, HandlerBroker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[HandlerBroker]:
    broker = HandlerBroker(tmp_path)
    yield broker
    broker.close()


def _with_records(broker: HandlerBroker, count: int, configs: dict[str, str | None] | None = None) -> None:
    asyncio.run(broker.create_topic("t", configs=configs))
    for i in range(count):
        builder = RecordBatchBuilder(0)
        builder.append(1_700_000_000_000, None, b"v%d" % i)
        broker.services.replicas.append_records(
            TopicPartition("t", 0), bytearray(builder.build()), AppendOrigin.CLIENT, 1
        )


def _read(broker: HandlerBroker, offset: int, api_version: int = 17, replica_id: int = -1) -> LogReadResult:
    isolation = FetchIsolation.LOG_END if replica_id >= 0 else FetchIsolation.HIGH_WATERMARK
    params = FetchParams(api_version, replica_id, isolation, "", LISTENER)
    entry = CachedPartition("t", None, 0, offset, 1 << 20)
    services = broker.services
    return read_from_log(services.replicas, services.replication_quotas.leader, params, entry, 1 << 20, True)


def test_a_consumer_reads_the_records_with_the_logs_offsets(broker: HandlerBroker) -> None:
    _with_records(broker, 3)
    read = _read(broker, 1)
    assert read.error_code is ErrorCode.NONE
    assert (read.high_watermark, read.last_stable_offset, read.log_start_offset) == (3, 3, 0)
    assert len(read.records) > 0 and read.aborted_transactions is None


def test_an_offset_past_the_log_end_is_out_of_range_with_the_offsets(broker: HandlerBroker) -> None:
    _with_records(broker, 2)
    read = _read(broker, 7)
    assert read.error_code is ErrorCode.OFFSET_OUT_OF_RANGE
    assert (read.high_watermark, read.log_start_offset) == (2, 0)
    assert read.records == b""


def test_an_unknown_partition_and_a_replica_that_is_none_here_are_refused(broker: HandlerBroker) -> None:
    assert _read(broker, 0).error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    _with_records(broker, 1)
    # a single node's partitions have no other replica: no broker fetches them as a follower
    assert _read(broker, 0, replica_id=2).error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_version_that_cannot_read_the_topics_format_is_refused(broker: HandlerBroker) -> None:
    _with_records(broker, 1, {"compression.type": "zstd", "message.downconversion.enable": "false"})
    assert _read(broker, 0, api_version=9).error_code is ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert _read(broker, 0, api_version=10).error_code is ErrorCode.NONE
