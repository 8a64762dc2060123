"""TxnOffsetCommit over the wire: the offsets count only after the COMMIT marker, vanish with an ABORT,
and stay pending across a SIGKILL of the broker (replayed from `__consumer_offsets`: the transactional
batch, then the marker); and a transactional id idle for `transactional.id.expiration.ms` is forgotten."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from odradek.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.txn_wire import create_topics, end_txn, init

pytestmark = pytest.mark.timeout(90)
E = ErrorCode
SETTINGS = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "2"}


def _commit_in_txn(client: RawClient, txn_id: str, pid: int, epoch: int, offset: int) -> None:
    add = AddOffsetsToTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, group_id="g")
    assert client.request(add, 3).error_code == E.NONE
    commit = TxnOffsetCommitRequest(
        transactional_id=txn_id,
        group_id="g",
        producer_id=pid,
        producer_epoch=epoch,
        topics=[
            TxnOffsetCommitRequestTopic(
                name="input",
                partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)],
            )
        ],
    )
    answer = client.request(commit, 3)
    assert answer.topics[0].partitions[0].error_code == E.NONE


def _committed(client: RawClient) -> int:
    request = OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequestTopic(name="input", partition_indexes=[0])]
    )
    return int(client.request(request, 5).topics[0].partitions[0].committed_offset)


def _wait_loaded(broker: BrokerProcess) -> RawClient:
    deadline = time.monotonic() + 10
    while True:
        client = RawClient(broker.port)
        if init(client, "probe")[1] is E.NONE:
            return client
        client.close()
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_offsets_count_after_commit_only_and_survive_a_sigkill(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        with RawClient(broker.port) as client:
            create_topics(client, "input")
            pid, _, epoch = init(client, "offsets-txn")
            _commit_in_txn(client, "offsets-txn", pid, epoch, 10)
            assert _committed(client) == -1  # pending
            assert end_txn(client, "offsets-txn", pid, epoch, committed=True) is E.NONE
            assert _committed(client) == 10
            _commit_in_txn(client, "offsets-txn", pid, epoch, 20)
            assert end_txn(client, "offsets-txn", pid, epoch, committed=False) is E.NONE
            assert _committed(client) == 10  # the aborted 20 never counted
            _commit_in_txn(client, "offsets-txn", pid, epoch, 30)
        broker.kill()
        broker.start()
        client = _wait_loaded(broker)
        try:
            assert _committed(client) == 10  # still pending after the replay
            assert end_txn(client, "offsets-txn", pid, epoch, committed=True) is E.NONE
            assert _committed(client) == 30
        finally:
            client.close()
        broker.kill()
        broker.start()
        client = _wait_loaded(broker)
        try:
            assert _committed(client) == 30  # the marker is replayed too
        finally:
            client.close()
    finally:
        broker.stop()


def test_offsets_outside_the_transaction_are_refused(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        with RawClient(broker.port) as client:
            pid, _, epoch = init(client, "no-add-offsets")
            commit = TxnOffsetCommitRequest(
                transactional_id="no-add-offsets",
                group_id="g",
                producer_id=pid,
                producer_epoch=epoch,
                topics=[
                    TxnOffsetCommitRequestTopic(
                        name="input",
                        partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=5)],
                    )
                ],
            )
            # No AddOffsetsToTxn first: no marker would ever reach the offsets, so they are refused.
            assert client.request(commit, 3).topics[0].partitions[0].error_code == E.INVALID_TXN_STATE
            commit.producer_epoch = epoch - 1 if epoch else epoch + 5
            assert client.request(commit, 3).topics[0].partitions[0].error_code == E.PRODUCER_FENCED
            assert client.request(commit, 2).topics[0].partitions[0].error_code == E.INVALID_PRODUCER_EPOCH
    finally:
        broker.stop()


def test_an_idle_transactional_id_expires(tmp_path: Path) -> None:
    settings = {
        **SETTINGS,
        "transactional.id.expiration.ms": "500",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "100",
    }
    broker = BrokerProcess(tmp_path / "data", settings).start()
    try:
        with RawClient(broker.port) as client:
            pid, _, _ = init(client, "short-lived")
            started = time.monotonic()
            while True:
                state = client.request(DescribeTransactionsRequest(transactional_ids=["short-lived"]), 0)
                if state.transaction_states[0].error_code == E.TRANSACTIONAL_ID_NOT_FOUND:
                    break
                assert time.monotonic() - started < 5
                time.sleep(0.05)
            assert time.monotonic() - started >= 0.4
            fresh, error, epoch = init(client, "short-lived")
            assert (error, epoch) == (E.NONE, 0) and fresh != pid  # a new producer id, as Kafka
    finally:
        broker.stop()
