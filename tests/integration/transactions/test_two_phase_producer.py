"""odradek's two-phase-commit producer (src/odradek/client/two_phase_commit.py) against a broker
process: a transaction prepared by one OS process is committed or aborted by another, and a
confluent-kafka read_committed consumer sees its records exactly when it commits; the offset marker
committed with it becomes visible with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from odradek.client.partitioner import partition_for_key
from odradek.client.two_phase_commit import (
    PreparedTransaction,
    TwoPhaseError,
    TwoPhaseProducer,
    committed_offset,
    finish,
    open_transactions,
)
from odradek.protocol.error_codes import ErrorCode
from tests.support.broker_process import BrokerProcess
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(180)
SETTINGS = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "3",
    "num.partitions": "3",
    "transaction.two.phase.commit.enable": "true",
}
PREPARE = """
import sys
from odradek.client.two_phase_commit import OffsetMarker, TwoPhaseProducer

bootstrap, txn_id, topic = sys.argv[1:4]
group = f"marker-{txn_id}"
with TwoPhaseProducer(bootstrap, txn_id) as producer:
    producer.begin()
    for i in range(300):
        producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
    prepared = producer.prepare(OffsetMarker(group, "batches", 0, 8))
print(prepared.producer_id, prepared.producer_epoch)
"""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("twopc-producer") / "data", SETTINGS).start()
    try:
        yield process
    finally:
        process.stop()


def prepare_in_another_process(bootstrap: str, txn_id: str, topic: str) -> PreparedTransaction:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PREPARE), bootstrap, txn_id, topic],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    pid, epoch = done.stdout.split()
    return PreparedTransaction(txn_id, int(pid), int(epoch))


@pytest.mark.parametrize("commit", [True, False])
def test_a_transaction_prepared_in_one_process_is_finished_in_another(
    broker: BrokerProcess, commit: bool
) -> None:
    topic, txn_id = f"prepared-{commit}", f"sink-{commit}-0"
    prepared = prepare_in_another_process(broker.bootstrap, txn_id, topic)
    assert txn_id in open_transactions(broker.bootstrap)
    assert read_committed_values(broker.bootstrap, topic, 3) == {0: [], 1: [], 2: []}  # still open
    marker = f"marker-{txn_id}"
    assert committed_offset(broker.bootstrap, marker, "batches", 0) == -1  # pending until the commit
    assert finish(broker.bootstrap, txn_id, commit, expected=prepared) == prepared
    assert txn_id not in open_transactions(broker.bootstrap)
    values = read_committed_values(broker.bootstrap, topic, 3)
    if commit:
        assert sorted(v for part in values.values() for v in part) == sorted(
            f"v{i}".encode() for i in range(300)
        )
        assert values[partition_for_key(b"k7", 3)].count(b"v7") == 1
        assert committed_offset(broker.bootstrap, marker, "batches", 0) == 8
    else:
        assert values == {0: [], 1: [], 2: []}
        assert committed_offset(broker.bootstrap, marker, "batches", 0) == -1
    # Nothing is left to finish: a second finish finds no transaction.
    assert finish(broker.bootstrap, txn_id, commit) is None


def test_finish_refuses_a_transaction_other_than_the_one_expected(broker: BrokerProcess) -> None:
    prepared = prepare_in_another_process(broker.bootstrap, "sink-other-0", "prepared-other")
    stale = PreparedTransaction(prepared.transactional_id, prepared.producer_id, prepared.producer_epoch - 1)
    with pytest.raises(TwoPhaseError) as refused:
        finish(broker.bootstrap, "sink-other-0", True, expected=stale)
    assert refused.value.error is ErrorCode.INVALID_TXN_STATE
    # The refusal took the transaction over (fencing its writer) but left it open, still to finish.
    assert "sink-other-0" in open_transactions(broker.bootstrap)
    assert finish(broker.bootstrap, "sink-other-0", False) is not None


def test_begin_aborts_what_an_earlier_instance_left_open(broker: BrokerProcess) -> None:
    prepare_in_another_process(broker.bootstrap, "sink-restart-0", "prepared-restart")
    with TwoPhaseProducer(broker.bootstrap, "sink-restart-0") as producer:
        producer.begin()
        producer.send("prepared-restart", b"second")
        prepared = producer.prepare()
    assert finish(broker.bootstrap, "sink-restart-0", True, expected=prepared) == prepared
    values = read_committed_values(broker.bootstrap, "prepared-restart", 3)
    assert [v for part in values.values() for v in part] == [b"second"]


def test_keyed_records_land_where_librdkafkas_murmur2_partitioner_puts_them(broker: BrokerProcess) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    placed: dict[bytes, int] = {}
    for i in range(50):
        key = f"metric|{i}".encode()
        producer.produce(
            "keyed", b"x", key, on_delivery=lambda e, m: placed.__setitem__(m.key(), m.partition())
        )
    assert producer.flush(30) == 0
    assert placed == {key: partition_for_key(key, 3) for key in placed} and len(placed) == 50


def test_the_producer_reconnects_when_its_broker_restarts_mid_transaction(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        with TwoPhaseProducer(broker.bootstrap, "sink-bounced-0") as producer:
            producer.begin()
            producer.send("bounced", b"before")
            producer.prepare()  # connections open to the broker, a transaction open on it
            broker.restart()
            # The open transaction survived: a new begin() on the same producer aborts it, and the
            # next one is prepared over new connections.
            producer.begin()
            producer.send("bounced", b"after")
            prepared = producer.prepare()
        assert finish(broker.bootstrap, "sink-bounced-0", True, expected=prepared) == prepared
        values = read_committed_values(broker.bootstrap, "bounced", 3)
        assert [v for part in values.values() for v in part] == [b"after"]
    finally:
        broker.stop()
