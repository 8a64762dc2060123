"""Transactions in cluster mode: a real ZooKeeper and three broker processes (127.0.0.2-4), the
transaction coordinator on the leader of the transactional id's `__transaction_state` partition, its
markers sent to the other brokers' partitions with WriteTxnMarkers, and real clients.

Every topic here has REPLICATION replicas, 1, so a stopped broker's partitions wait for it to come
back (the coordinator's successor is the same broker, from its log); test_cluster_transactions_rf3.py
runs the same kinds of checks at replication factor 3 with brokers lost for good.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from odradek.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from tests.support.broker_process import REPO
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_cluster import (
    BROKER_IDS,
    CLEANUP_INTERVAL_MS,
    PARTITIONS,
    Cluster,
    commit_abort_commit,
    expected_after_rounds,
    send_to_every_partition,
    transactional_producer,
)
from tests.support.txn_reader import read_committed_values
from tests.support.txn_wire import add_partitions, committed_values, end_txn, init, produce, read_committed
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(400)
REPLICATION = 1


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = Cluster(tmp_path_factory.mktemp("txn-cluster"), connect, REPLICATION)
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(lambda: _all_known(made), 30, "three brokers in Metadata", interval=0.1)
        yield made
    finally:
        for broker in made.brokers.values():
            if broker.process is not None:
                os.kill(broker.process.pid, signal.SIGCONT)
            broker.stop()


def _all_known(cluster: Cluster) -> bool:
    try:
        return all(len(cluster.metadata(node, []).brokers) == 3 for node in BROKER_IDS)
    except Exception:
        return False


def test_confluent_transactions_commit_and_abort_on_partitions_of_all_three_brokers(cluster: Cluster) -> None:
    cluster.create("txn-spread")
    leaders = cluster.leaders("txn-spread", asked=1)
    assert set(leaders.values()) == set(BROKER_IDS), leaders  # every broker leads some partition
    producer = transactional_producer(cluster, "spread-producer")
    coordinator = cluster.coordinator("spread-producer")
    assert {n for n in leaders.values() if n != coordinator}, "markers must cross to other brokers"
    commit_abort_commit(producer, "txn-spread")
    values = read_committed_values(cluster.bootstrap(), "txn-spread", PARTITIONS, timeout_s=60)
    assert values == expected_after_rounds()


def _copier(cluster: Cluster, errors: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "tests.support.txn_copier",
        cluster.bootstrap(),
        "copy-in",
        "copy-out",
        "cluster-copier",
        "cluster-copy-group",
        str(PARTITIONS),
        "0.1",  # seconds inside each transaction, so that the kills land mid-copy
    ]
    with errors.open("ab") as stderr:  # librdkafka's own lines too, for a failure's message
        return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)


def test_transactional_copy_with_the_copier_killed_and_a_broker_bounced(
    cluster: Cluster, tmp_path: Path
) -> None:
    from confluent_kafka import Producer

    records = 1200
    cluster.create("copy-in")
    cluster.create("copy-out")
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "enable.idempotence": True})
    for i in range(records):
        producer.produce(
            "copy-in", key=str(i).encode(), value=f"record-{i}".encode(), partition=i % PARTITIONS
        )
    producer.flush(60)
    expected = read_committed_values(cluster.bootstrap(), "copy-in", PARTITIONS, timeout_s=60)
    assert sum(len(v) for v in expected.values()) == records
    errors = tmp_path / "copier-stderr.log"
    rng = random.Random(19)
    for kill in range(3):
        copier = _copier(cluster, errors)
        time.sleep(rng.uniform(2.0, 4.0))
        if kill == 1:
            # A broker bounced under the running copier: SIGTERM (controlled shutdown), restart.
            bounced = cluster.brokers[2]
            assert bounced.stop() == 0
            bounced.start()
            wait_until(lambda: cluster.all_led("copy-out", PARTITIONS), 60, "copy-out led again")
        copier.kill()  # SIGKILL, probably inside a transaction
        copier.wait()
    copier = _copier(cluster, errors)
    assert copier.wait(240) == 0, errors.read_text()[-3000:]
    output = read_committed_values(cluster.bootstrap(), "copy-out", PARTITIONS, timeout_s=60)
    assert {p: len(v) for p, v in output.items()} == {p: len(v) for p, v in expected.items()}
    assert output == expected  # nothing lost, nothing twice, in order per partition


def test_a_killed_coordinators_open_transaction_is_aborted_by_its_successor(cluster: Cluster) -> None:
    from confluent_kafka import Consumer, TopicPartition

    timeout_ms = 6000
    cluster.create("txn-orphan")
    producer = transactional_producer(cluster, "orphan-producer", **{"transaction.timeout.ms": timeout_ms})
    coordinator = cluster.coordinator("orphan-producer")
    leaders = cluster.leaders("txn-orphan", asked=1)
    elsewhere = [p for p, node in leaders.items() if node != coordinator]
    producer.begin_transaction()
    send_to_every_partition(producer, "txn-orphan", "orphan")
    began = time.monotonic()
    cluster.brokers[coordinator].kill()  # SIGKILL: the transaction is left open, its producer too
    # Readers of partitions on the other brokers see nothing past the open transaction meanwhile.
    reader = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(*[n for n in BROKER_IDS if n != coordinator]),
            "group.id": "orphan-reader",
            "isolation.level": "read_committed",
        }
    )
    try:
        wanted = [TopicPartition("txn-orphan", p) for p in elsewhere]

        def stable_offsets() -> list[int]:
            return [reader.get_watermark_offsets(tp, timeout=5, cached=False)[1] for tp in wanted]

        assert stable_offsets() == [0] * len(elsewhere)
        other = next(n for n in BROKER_IDS if n != coordinator)
        # Its ZooKeeper session must expire before it may register again.
        wait_until(lambda: len(cluster.metadata(other, []).brokers) == 2, 60, "the kill noticed")
        cluster.brokers[coordinator].start()  # its successor (RF 1: the same broker, from its log)
        restarted = time.monotonic() - began
        wait_until(lambda: stable_offsets() == [2] * len(elsewhere), 90, "the orphan aborted", interval=0.2)
        blocked = time.monotonic() - began
    finally:
        reader.close()
    # The data record and the ABORT marker. Bound: the transaction's timeout (counted from its start,
    # before `began`) or the successor's start-up if that is later, plus one cleanup interval, with
    # room for a loaded machine. Measured: 6.2-6.8 s, the successor up after 4.2-4.8 s.
    bound = max(restarted, timeout_ms / 1000) + CLEANUP_INTERVAL_MS / 1000
    assert blocked <= bound + 10, (blocked, restarted)
    values = read_committed_values(cluster.bootstrap(), "txn-orphan", PARTITIONS, timeout_s=60)
    assert values == {p: [] for p in range(PARTITIONS)}


def test_a_leader_verifies_transactional_batches_with_the_coordinator_on_another_broker(
    cluster: Cluster,
) -> None:
    cluster.create("verified", partitions=1)
    leader = cluster.leaders("verified", asked=1)[0]
    txn_id = next(t for t in (f"verify-{i}" for i in range(100)) if cluster.coordinator(t) != leader)
    coordinator = cluster.coordinator(txn_id)
    at_coordinator = RawClient(cluster.brokers[coordinator].port, host=cluster.brokers[coordinator].host)
    at_leader = RawClient(cluster.brokers[leader].port, host=cluster.brokers[leader].host)
    with at_coordinator, at_leader:
        pid, error, epoch = init(at_coordinator, txn_id)
        assert error is ErrorCode.NONE
        batch = {"pid": pid, "epoch": epoch, "transactional": True, "txn_id": txn_id}
        # Not added to the transaction: the leader's question to the coordinator says so.
        assert produce(at_leader, "verified", [b"early"], **batch)[0] is ErrorCode.INVALID_TXN_STATE
        assert add_partitions(at_coordinator, txn_id, pid, epoch, "verified") is ErrorCode.NONE
        assert produce(at_leader, "verified", [b"one"], **batch)[0] is ErrorCode.NONE
        assert produce(at_leader, "verified", [b"two"], sequence=1, **batch)[0] is ErrorCode.NONE
        assert end_txn(at_coordinator, txn_id, pid, epoch, committed=True) is ErrorCode.NONE
        wait_until(
            lambda: committed_values(read_committed(at_leader, "verified")) == [b"one", b"two"],
            30,
            "the COMMIT marker on the other broker",
            interval=0.1,
        )


def test_txn_offset_commit_to_a_group_coordinator_on_another_broker_than_the_transactions(
    cluster: Cluster,
) -> None:
    cluster.create("offsets-in", partitions=1)
    txn_id = "offsets-txn"
    coordinator = cluster.coordinator(txn_id)
    group = next(
        g for g in (f"group-{i}" for i in range(100)) if cluster.coordinator(g, key_type=0) != coordinator
    )
    group_coordinator = cluster.coordinator(group, key_type=0)
    at_txn = RawClient(cluster.brokers[coordinator].port, host=cluster.brokers[coordinator].host)
    at_group = RawClient(
        cluster.brokers[group_coordinator].port, host=cluster.brokers[group_coordinator].host
    )
    with at_txn, at_group:
        pid, error, epoch = init(at_txn, txn_id)
        assert error is ErrorCode.NONE

        def commit(offset: int) -> ErrorCode:
            request = TxnOffsetCommitRequest(
                transactional_id=txn_id,
                group_id=group,
                producer_id=pid,
                producer_epoch=epoch,
                topics=[
                    TxnOffsetCommitRequestTopic(
                        name="offsets-in",
                        partitions=[
                            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)
                        ],
                    )
                ],
            )
            return ErrorCode(at_group.request(request, 3).topics[0].partitions[0].error_code)

        # The group's offsets partition is not in the transaction yet: its coordinator says so.
        assert commit(5) is ErrorCode.INVALID_TXN_STATE
        add = AddOffsetsToTxnRequest(
            transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, group_id=group
        )
        assert at_txn.request(add, 3).error_code == ErrorCode.NONE
        assert commit(5) is ErrorCode.NONE
        assert end_txn(at_txn, txn_id, pid, epoch, committed=True) is ErrorCode.NONE

        def committed() -> int:
            request = OffsetFetchRequest(
                group_id=group, topics=[OffsetFetchRequestTopic(name="offsets-in", partition_indexes=[0])]
            )
            return int(at_group.request(request, 5).topics[0].partitions[0].committed_offset)

        wait_until(lambda: committed() == 5, 30, "the COMMIT marker in __consumer_offsets", interval=0.1)


def test_write_txn_markers_answers_per_partition_on_the_broker_that_leads_it(cluster: Cluster) -> None:
    cluster.create("markers")
    leaders = cluster.leaders("markers", asked=1)
    broker = cluster.brokers[1]
    request = WriteTxnMarkersRequest(
        markers=[
            WritableTxnMarker(
                producer_id=999_999,
                producer_epoch=0,
                transaction_result=False,
                topics=[WritableTxnMarkerTopic(name="markers", partition_indexes=list(range(PARTITIONS)))],
                coordinator_epoch=0,
            )
        ]
    )
    with RawClient(broker.port, host=broker.host) as client:
        response = client.request(request, 1)
    answered = {p.partition_index: ErrorCode(p.error_code) for p in response.markers[0].topics[0].partitions}
    assert answered == {
        p: ErrorCode.NONE if leader == 1 else ErrorCode.NOT_LEADER_OR_FOLLOWER
        for p, leader in leaders.items()
    }


def test_the_transactions_command_reaches_every_coordinator_and_leader_from_one_bootstrap_broker(
    cluster: Cluster,
) -> None:
    from tests.compat.cli.cli_support import odradek, table_rows

    cluster.create("txn-cli")
    leaders = cluster.leaders("txn-cli", asked=1)
    # open transactions until one is coordinated by a broker other than the bootstrap one (broker 1)
    hanging: dict[str, int] = {}
    producers = []
    for n in range(12):
        txn_id = f"cli-hanging-{n}"
        producer = transactional_producer(cluster, txn_id, **{"transaction.timeout.ms": 600000})
        producer.begin_transaction()
        send_to_every_partition(producer, "txn-cli", txn_id)
        producers.append(producer)
        hanging[txn_id] = cluster.coordinator(txn_id)
        if {c for c in hanging.values() if c != 1}:
            break
    elsewhere = next(t for t, c in hanging.items() if c != 1)
    bootstrap = cluster.brokers[1].bootstrap

    listed = odradek("transactions", "list", "--state", "Ongoing", bootstrap=bootstrap)
    assert listed.code == 0, listed.stderr
    assert {r["TransactionalId"] for r in table_rows(listed.stdout, "TransactionalId")} >= set(hanging)

    described = odradek("transactions", "describe", "--transactional-id", elsewhere, bootstrap=bootstrap)
    assert described.code == 0, described.stderr
    [row] = table_rows(described.stdout, "TransactionalId")
    assert row["TransactionState"] == "Ongoing"

    # a hanging transaction's partition led by another broker than the bootstrap one
    partition = next(p for p, leader in leaders.items() if leader != 1)
    start = min(_open_transaction_starts(cluster, "txn-cli", partition, leaders[partition]))
    aborted = odradek(
        "transactions",
        "abort",
        "--topic",
        "txn-cli",
        "--partition",
        str(partition),
        "--start-offset",
        str(start),
        bootstrap=bootstrap,
    )
    assert aborted.code == 0, aborted.stderr
    assert start not in _open_transaction_starts(cluster, "txn-cli", partition, leaders[partition])
    for txn_id in hanging:
        assert (
            odradek("transactions", "force-terminate", "--transactional-id", txn_id, bootstrap=bootstrap).code
            == 0
        )


def _open_transaction_starts(cluster: Cluster, topic: str, partition: int, leader: int) -> list[int]:
    from odradek.protocol.messages import describe_producers as dp

    broker = cluster.brokers[leader]
    request = dp.DescribeProducersRequest(topics=[dp.TopicRequest(name=topic, partition_indexes=[partition])])
    with RawClient(broker.port, timeout=10, host=broker.host) as client:
        answer = client.request(request, 0).topics[0].partitions[0]
    assert answer.error_code == 0
    return [p.current_txn_start_offset for p in answer.active_producers if p.current_txn_start_offset >= 0]
