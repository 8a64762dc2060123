"""The transactional copy test (Kafka's transactions system test, on one node): a consume-transform-
produce copier moves an input topic to an output topic in transactions, is SIGKILLed a few times in the
middle and restarted, and the output read_committed must equal the input: nothing lost, nothing twice,
in order per partition. The broker is also SIGKILLed once, so the coordinator's state, the producer
state and the pending offsets are rebuilt from the logs."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import REPO, BrokerProcess
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(240)
PARTITIONS = 2
RECORDS = 1000
KILLS = 3


def _copier(bootstrap: str) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "tests.support.txn_copier",
        bootstrap,
        "in",
        "out",
        "copier",
        "copy-group",
        str(PARTITIONS),
        "0.1",  # seconds inside each transaction of 10 records, so that the kills land mid-copy
    ]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _committed(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "copy-group"})
    try:
        offsets = consumer.committed([TopicPartition("in", p) for p in range(PARTITIONS)], 20)
        return sum(max(tp.offset, 0) for tp in offsets)
    finally:
        consumer.close()


def test_copy_with_the_copier_and_the_broker_killed(tmp_path: Path) -> None:
    settings = {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "3"}
    broker = BrokerProcess(tmp_path / "data", settings).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in ("in", "out")]).values():
            future.result(20)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
        for i in range(RECORDS):
            producer.produce(
                "in", key=str(i).encode(), value=f"record-{i}".encode(), partition=i % PARTITIONS
            )
        producer.flush(30)
        expected = read_committed_values(broker.bootstrap, "in", PARTITIONS)
        rng = random.Random(7)
        for kill in range(KILLS):
            copier = _copier(broker.bootstrap)
            time.sleep(rng.uniform(1.5, 3.0))
            copier.kill()  # SIGKILL, probably inside a transaction
            copier.wait()
            if kill == 1:
                broker.kill()  # and the broker too, once: everything is rebuilt from its logs
                broker.start()
        progress = _committed(broker.bootstrap)
        assert 0 < progress < RECORDS, f"the kills interrupted no work: {progress} of {RECORDS} copied"
        copier = _copier(broker.bootstrap)
        assert copier.wait(120) == 0
        output = read_committed_values(broker.bootstrap, "out", PARTITIONS)
        assert {p: len(v) for p, v in output.items()} == {p: len(v) for p, v in expected.items()}
        assert output == expected
    finally:
        broker.stop()
