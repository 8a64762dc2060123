"""Transactions at replication factor 3: `__transaction_state` (min.isr 2), `__consumer_offsets` and
the data topics on all three brokers, so a coordinator's broker can be lost for good and the leader
the controller elects next for its `__transaction_state` partition takes the transactions over.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from tests.support.broker_process import REPO
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module
from tests.support.txn_cluster import (
    BROKER_IDS,
    PARTITIONS,
    Cluster,
    commit_abort_commit,
    expected_after_rounds,
    send_to_every_partition,
    transactional_producer,
)
from tests.support.txn_reader import read_committed_values
from tests.support.txn_wire import add_partitions, end_txn, init, produce
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(400)
REPLICATION = 3
TXN_STATE = "__transaction_state"


@pytest.fixture(scope="module")
def cluster(zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    require_module("confluent_kafka")
    connect = f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}"
    made = Cluster(tmp_path_factory.mktemp("txn-rf3"), connect, REPLICATION, min_isr=2)
    try:
        for broker in made.brokers.values():
            broker.start()
        wait_until(lambda: _all_in_sync(made), 60, "three brokers in Metadata", interval=0.2)
        yield made
    finally:
        for broker in made.brokers.values():
            if broker.process is not None and broker.process.poll() is None:
                os.kill(broker.process.pid, signal.SIGCONT)
            broker.stop()


def _all_in_sync(cluster: Cluster, *topics: str) -> bool:
    """Every broker known and every partition of `topics` with its three replicas in sync."""
    try:
        for node in BROKER_IDS:
            described = cluster.metadata(node, list(topics) or [])
            if len(described.brokers) != 3:
                return False
            for topic in described.topics:
                if topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    continue  # not created yet (`__transaction_state` is, on first use)
                if topic.error_code != 0 or any(len(p.isr_nodes) != 3 for p in topic.partitions):
                    return False
        return True
    except Exception:
        return False


def _everyone_back(cluster: Cluster, *topics: str) -> None:
    """Start the brokers an earlier test left dead and wait for full ISRs again."""
    for node, broker in cluster.brokers.items():
        if node not in cluster.running():
            broker.start()
    wait_until(lambda: _all_in_sync(cluster, TXN_STATE, *topics), 90, "every replica in sync", interval=0.2)


def _txn_state_partition(cluster: Cluster, transactional_id: str) -> int:
    """The `__transaction_state` partition of an id, as the brokers compute it (Java's hashCode)."""
    from odradek.coordinator.partitioning import partition_for

    (topic,) = cluster.metadata(cluster.running()[0], [TXN_STATE]).topics
    return partition_for(transactional_id, len(topic.partitions))


def test_commit_and_abort_with_every_log_replicated_three_times(cluster: Cluster) -> None:
    cluster.create("rf3-spread")
    producer = transactional_producer(cluster, "rf3-spread-producer")
    commit_abort_commit(producer, "rf3-spread")
    values = read_committed_values(cluster.bootstrap(), "rf3-spread", PARTITIONS, timeout_s=60)
    assert values == expected_after_rounds()


def test_offsets_of_a_committed_transaction_are_never_read_as_none_by_a_read_committed_consumer(
    cluster: Cluster,
) -> None:
    """Issue 25 item 22: right after commit_transaction of a transaction that only sent offsets, its
    COMMIT marker is in the group coordinator's log but not yet on the followers; OffsetFetch with
    require_stable answered the previous offset (none: -1001) there instead of UNSTABLE_OFFSET_COMMIT,
    and a consumer restarted after an exactly-once copy would read its input again."""
    from confluent_kafka import Consumer, TopicPartition

    _everyone_back(cluster)
    topic, group = "rf3-txn-offsets", "rf3-txn-offsets-group"
    cluster.create(topic, partitions=1)
    group_coordinator = cluster.coordinator(group, key_type=0)
    # one producer whose coordinator is the group's (markers written locally), one whose is another
    # broker's (markers sent with WriteTxnMarkers)
    candidates = [f"rf3-txn-offsets-{i}" for i in range(40)]
    by_coordinator = {cluster.coordinator(t): t for t in reversed(candidates)}
    transactional_ids = [
        by_coordinator[group_coordinator],
        next(t for node, t in by_coordinator.items() if node != group_coordinator),
    ]
    reader = Consumer(
        {"bootstrap.servers": cluster.bootstrap(), "group.id": group, "isolation.level": "read_committed"}
    )
    at = cluster.brokers[group_coordinator]
    try:
        metadata = reader.consumer_group_metadata()
        offset = 0
        for transactional_id in transactional_ids:
            producer = transactional_producer(cluster, transactional_id)
            for round_ in range(10):
                offset += 1
                producer.begin_transaction()
                producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)], metadata, 60)
                producer.commit_transaction(60)
                if round_ % 2:
                    (committed,) = reader.committed([TopicPartition(topic, 0)], 60)
                    assert committed.offset == offset, (transactional_id, round_)
                else:
                    with RawClient(at.port, timeout=30, host=at.host) as client:
                        assert _stable_offset(client, group, topic) == offset, (transactional_id, round_)
    finally:
        reader.close()


def _stable_offset(client: RawClient, group: str, topic: str) -> int:
    """Partition 0's committed offset as OffsetFetch v7 with require_stable answers it, asked again
    while it is UNSTABLE_OFFSET_COMMIT (first at once, as soon as possible after the commit, then
    after a pause as short as a client's retry backoff, not in a tight loop)."""
    request = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
        require_stable=True,
    )
    deadline = time.monotonic() + 30
    while True:
        response = client.request(request, 7)
        assert response.error_code == ErrorCode.NONE
        (partition,) = response.topics[0].partitions
        if partition.error_code != ErrorCode.UNSTABLE_OFFSET_COMMIT or time.monotonic() > deadline:
            assert partition.error_code == ErrorCode.NONE
            return int(partition.committed_offset)
        time.sleep(0.01)


def test_end_txn_is_answered_only_once_its_prepare_record_is_on_every_in_sync_replica(
    cluster: Cluster,
) -> None:
    cluster.create("rf3-prepare", partitions=1)
    txn_id = "rf3-prepare-txn"
    coordinator = cluster.coordinator(txn_id)
    data_leader = cluster.leaders("rf3-prepare", asked=coordinator)[0]
    # a follower of the coordinator's partition that does not lead the data partition: the marker
    # could be written there at once
    follower = next(n for n in BROKER_IDS if n not in (coordinator, data_leader))
    at = cluster.brokers[coordinator]
    with RawClient(at.port, timeout=30, host=at.host) as client:
        pid, error, epoch = init(client, txn_id)
        assert error is ErrorCode.NONE
        assert add_partitions(client, txn_id, pid, epoch, "rf3-prepare") is ErrorCode.NONE
        leader = cluster.brokers[data_leader]
        with RawClient(leader.port, timeout=30, host=leader.host) as to_leader:
            batch = {"pid": pid, "epoch": epoch, "transactional": True, "txn_id": txn_id}
            assert produce(to_leader, "rf3-prepare", [b"v"], **batch)[0] is ErrorCode.NONE
        answers: list[ErrorCode] = []
        follower_process = cluster.brokers[follower].process
        assert follower_process is not None
        # One in-sync follower stalls (shorter than its ZooKeeper session and the ISR's lag bound):
        # the PrepareCommit cannot be on every in-sync replica, so EndTxn must not be answered yet.
        os.kill(follower_process.pid, signal.SIGSTOP)
        try:
            asking = threading.Thread(
                target=lambda: answers.append(end_txn(client, txn_id, pid, epoch, committed=True))
            )
            asking.start()
            asking.join(1.5)
            answered_while_stalled = list(answers)
            markers_while_stalled = _control_batches(leader.data_dir / "rf3-prepare-0")
        finally:
            os.kill(follower_process.pid, signal.SIGCONT)
        asking.join(60)
    assert answered_while_stalled == []
    # nor is the COMMIT marker written before the PrepareCommit is on the ISR: were that record lost
    # with the coordinator, its successor would abort a transaction already committed there
    assert markers_while_stalled == 0
    assert answers == [ErrorCode.NONE]
    values = read_committed_values(cluster.bootstrap(), "rf3-prepare", 1, timeout_s=60)
    assert values == {0: [b"v"]}


def test_a_lost_coordinators_open_transaction_is_finished_by_the_next_leader_of_its_partition(
    cluster: Cluster,
) -> None:
    from confluent_kafka import KafkaException

    _everyone_back(cluster)
    cluster.create("rf3-orphan")
    txn_id = "rf3-orphan-producer"
    producer = transactional_producer(cluster, txn_id, **{"transaction.timeout.ms": 20000})
    coordinator = cluster.coordinator(txn_id)
    producer.begin_transaction()
    send_to_every_partition(producer, "rf3-orphan", "first")
    cluster.brokers[coordinator].kill()  # for good: not restarted in this test
    survivor = next(n for n in BROKER_IDS if n != coordinator)
    # The kill is noticed once its ZooKeeper session expires; then the partition's next leader.
    wait_until(
        lambda: cluster.coordinator(txn_id, asked=survivor) != coordinator, 60, "a successor", interval=0.2
    )
    # The producer goes on: its commit reaches the successor (which loaded the ongoing transaction
    # from its replica of the partition), or fails and the transaction is aborted.
    try:
        producer.commit_transaction(60)
        first_committed = True
    except KafkaException as failure:
        error = failure.args[0]
        assert error.txn_requires_abort() or error.fatal(), error
        first_committed = False
        if error.txn_requires_abort():
            producer.abort_transaction(60)
        else:
            producer = transactional_producer(cluster, txn_id)  # fatal: a new instance takes over the id
    producer.begin_transaction()
    send_to_every_partition(producer, "rf3-orphan", "second")
    producer.commit_transaction(60)
    values = read_committed_values(cluster.bootstrap(survivor), "rf3-orphan", PARTITIONS, timeout_s=60)
    expected_tags = ["first", "second"] if first_committed else ["second"]
    assert values == {p: [f"{tag}-{p}".encode() for tag in expected_tags] for p in range(PARTITIONS)}


def test_a_new_producer_takes_over_after_the_coordinator_is_lost_and_the_old_one_is_fenced(
    cluster: Cluster,
) -> None:
    from confluent_kafka import KafkaException

    _everyone_back(cluster)
    cluster.create("rf3-takeover")
    txn_id = "rf3-takeover-producer"
    old = transactional_producer(cluster, txn_id)
    coordinator = cluster.coordinator(txn_id)
    old.begin_transaction()
    send_to_every_partition(old, "rf3-takeover", "old")
    cluster.brokers[coordinator].kill()  # not restarted
    # the successor aborts the open transaction, bumping the epoch
    new = transactional_producer(cluster, txn_id)
    new.begin_transaction()
    send_to_every_partition(new, "rf3-takeover", "new")
    new.commit_transaction(60)
    with pytest.raises(KafkaException):
        old.commit_transaction(30)  # fenced
    survivor = next(n for n in BROKER_IDS if n != coordinator)
    values = read_committed_values(cluster.bootstrap(survivor), "rf3-takeover", PARTITIONS, timeout_s=60)
    assert values == {p: [f"new-{p}".encode()] for p in range(PARTITIONS)}


def test_a_transaction_prepared_when_its_coordinator_dies_is_completed_by_the_successor(
    cluster: Cluster,
) -> None:
    _everyone_back(cluster)
    cluster.create("rf3-prepared")
    txn_id = "rf3-prepared-txn"
    coordinator = cluster.coordinator(txn_id)
    leaders = cluster.leaders("rf3-prepared", asked=coordinator)
    elsewhere = [p for p, node in leaders.items() if node != coordinator]
    assert elsewhere
    at = cluster.brokers[coordinator]
    with RawClient(at.port, timeout=30, host=at.host) as client:
        pid, error, epoch = init(client, txn_id)
        assert error is ErrorCode.NONE
        for p in elsewhere:
            assert add_partitions(client, txn_id, pid, epoch, "rf3-prepared", partition=p) is ErrorCode.NONE
        batch = {"pid": pid, "epoch": epoch, "transactional": True, "txn_id": txn_id}
        for p in elsewhere:
            leader = cluster.brokers[leaders[p]]
            with RawClient(leader.port, timeout=30, host=leader.host) as to_leader:
                assert produce(to_leader, "rf3-prepared", [f"v{p}".encode()], partition=p, **batch)[0] is (
                    ErrorCode.NONE
                )
        # The coordinator dies just after answering: its markers to the other brokers may not be
        # written yet; the PrepareCommit is on the ISR, so the next leader of its partition sends them.
        assert end_txn(client, txn_id, pid, epoch, committed=True) is ErrorCode.NONE
        at.kill()
    survivor = next(n for n in BROKER_IDS if n != coordinator)
    expected = {p: [f"v{p}".encode()] if p in elsewhere else [] for p in range(PARTITIONS)}
    seen: list[dict[int, list[bytes]]] = []

    def committed() -> bool:
        seen.append(read_committed_values(cluster.bootstrap(survivor), "rf3-prepared", PARTITIONS, 60))
        return seen[-1] == expected

    # Readers see nothing of it until the successor has written the COMMIT markers.
    wait_until(committed, 90, "the prepared transaction committed by the successor", interval=0.5)


def _copier(cluster: Cluster, errors: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "tests.support.txn_copier",
        cluster.bootstrap(),
        "rf3-copy-in",
        "rf3-copy-out",
        "rf3-copier",
        "rf3-copy-group",
        str(PARTITIONS),
        "0.1",
    ]
    with errors.open("ab") as stderr:
        return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)


def test_transactional_copy_with_the_busiest_leader_killed_and_restarted(
    cluster: Cluster, tmp_path: Path
) -> None:
    from confluent_kafka import Producer

    _everyone_back(cluster)
    records = 1200
    cluster.create("rf3-copy-in")
    cluster.create("rf3-copy-out")
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "enable.idempotence": True})
    for i in range(records):
        producer.produce("rf3-copy-in", value=f"record-{i}".encode(), partition=i % PARTITIONS)
    producer.flush(60)
    expected = read_committed_values(cluster.bootstrap(), "rf3-copy-in", PARTITIONS, timeout_s=60)
    assert sum(len(v) for v in expected.values()) == records
    errors = tmp_path / "copier-stderr.log"
    copier = _copier(cluster, errors)
    time.sleep(random.Random(3).uniform(2.0, 4.0))
    leads = Counter(cluster.leaders("rf3-copy-out", asked=1).values())
    leads.update(cluster.leaders("rf3-copy-in", asked=1).values())
    busiest = leads.most_common(1)[0][0]
    cluster.brokers[busiest].kill()  # SIGKILL under the running copier
    other = next(n for n in BROKER_IDS if n != busiest)
    # Its ZooKeeper session must expire before it may register again.
    wait_until(lambda: len(cluster.metadata(other, []).brokers) == 2, 60, "the kill noticed")
    cluster.brokers[busiest].start()
    # The copier may fail on the way (its commit timing out while leaders move), or stop early (it
    # ends after 3 s without input, which the failover can be): a new one, as in Kafka's own copy
    # test, aborts what was left open and goes on from the committed offsets.
    copier.wait(240)
    _everyone_back(cluster, "rf3-copy-in", "rf3-copy-out")
    for _ in range(3):
        copier = _copier(cluster, errors)
        if copier.wait(240) == 0:
            break
    assert copier.returncode == 0, errors.read_text()[-3000:]
    output = read_committed_values(cluster.bootstrap(), "rf3-copy-out", PARTITIONS, timeout_s=60)
    assert {p: len(v) for p, v in output.items()} == {p: len(v) for p, v in expected.items()}
    assert output == expected  # nothing lost, nothing twice, in order per partition


def _control_batches(partition_dir: Path) -> int:
    """How many control batches (transaction markers) a partition's log on disk holds."""
    from odradek.protocol.records import iter_record_batches

    return sum(
        batch.is_control
        for segment in sorted(partition_dir.glob("*.log"))
        for batch in iter_record_batches(segment.read_bytes())
    )
