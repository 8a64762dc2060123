"""Requests of a transactional producer, spoken over the wire with the raw client (no client library
between the test and the broker, so every error code is the broker's own)."""

from __future__ import annotations

import time

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopicData,
)
from odradek.protocol.messages.end_txn import EndTxnRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, PartitionData
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Record, build_record_batch, iter_record_batches
from tests.support.raw_client import RawClient


def create_topics(client: RawClient, *names: str) -> None:
    response = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names]), 1)
    assert [(t.name, t.error_code) for t in response.topics] == [(n, ErrorCode.NONE) for n in names]


def init(
    client: RawClient, txn_id: str, timeout_ms: int = 60000, version: int = 4
) -> tuple[int, ErrorCode, int]:
    """(producer id, error, epoch), retrying CONCURRENT_TRANSACTIONS as clients do."""
    for _ in range(50):
        r = client.request(
            InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout_ms), version
        )
        if r.error_code != ErrorCode.CONCURRENT_TRANSACTIONS:
            return r.producer_id, ErrorCode(r.error_code), r.producer_epoch
        time.sleep(0.05)
    raise AssertionError("CONCURRENT_TRANSACTIONS did not clear")


def add_partitions(
    client: RawClient, txn_id: str, pid: int, epoch: int, topic: str, version: int = 3, partition: int = 0
) -> ErrorCode:
    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopicData(name=topic, partitions=[partition])],
    )
    response = client.request(request, version)
    return ErrorCode(response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)


def end_txn(
    client: RawClient, txn_id: str, pid: int, epoch: int, committed: bool, version: int = 3
) -> ErrorCode:
    request = EndTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=committed
    )
    return ErrorCode(client.request(request, version).error_code)


def produce(
    client: RawClient,
    topic: str,
    values: list[bytes],
    pid: int = -1,
    epoch: int = 0,
    sequence: int = 0,
    transactional: bool = False,
    txn_id: str | None = None,
    partition: int = 0,
) -> tuple[ErrorCode, int]:
    now = int(time.time() * 1000)
    records = [Record(offset=i, timestamp=now, key=None, value=v) for i, v in enumerate(values)]
    if pid < 0:
        batch = build_record_batch(records)
    else:
        batch = build_record_batch(
            records,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=sequence,
            is_transactional=transactional,
        )
    request = ProduceRequest(
        transactional_id=txn_id,
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )
    answer = client.request(request, 9).responses[0].partition_responses[0]
    return ErrorCode(answer.error_code), answer.base_offset


def read_committed(client: RawClient, topic: str, max_wait_ms: int = 0) -> PartitionData:
    request = FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        isolation_level=1,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)],
            )
        ],
    )
    partition: PartitionData = client.request(request, 11).responses[0].partitions[0]
    return partition


def committed_values(partition: PartitionData) -> list[bytes]:
    """What a read_committed consumer keeps: data records outside the aborted transactions."""
    aborted = {(a.producer_id, a.first_offset) for a in partition.aborted_transactions or []}
    aborted_pids: set[int] = set()
    values = []
    for batch in iter_record_batches(partition.records or b""):
        starts = {pid for pid, first in aborted if first <= batch.base_offset and pid == batch.producer_id}
        if batch.is_control:
            aborted_pids.discard(batch.producer_id)
            continue
        aborted_pids |= starts
        if batch.is_transactional and batch.producer_id in aborted_pids:
            continue
        values += [r.value for r in batch.records if r.value is not None]
    return values


def init_2pc(
    client: RawClient,
    txn_id: str,
    keep_prepared: bool,
    enable_2pc: bool = True,
    timeout_ms: int = 60000,
) -> InitProducerIdResponse:
    """InitProducerId v6 (KIP-939), retrying CONCURRENT_TRANSACTIONS as clients do."""
    request = InitProducerIdRequest(
        transactional_id=txn_id,
        transaction_timeout_ms=timeout_ms,
        enable2_pc=enable_2pc,
        keep_prepared_txn=keep_prepared,
    )
    for _ in range(50):
        response: InitProducerIdResponse = client.request(request, 6)
        if response.error_code != ErrorCode.CONCURRENT_TRANSACTIONS:
            return response
        time.sleep(0.05)
    raise AssertionError("CONCURRENT_TRANSACTIONS did not clear")
