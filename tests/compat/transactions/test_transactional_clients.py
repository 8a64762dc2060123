"""Transactional producers of confluent-kafka (librdkafka), kafka-python and aiokafka against a broker
process: init, begin, produce, send_offsets_to_transaction, commit and abort; a read_committed reader
sees the committed records exactly once, in order, and never an aborted one; the offsets sent in a
transaction count only once it commits; a zombie with an old epoch is fenced; a producer killed inside
a transaction holds read_committed readers back no longer than its timeout plus the cleanup interval."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator

import aiokafka
import kafka
import kafka.errors
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker_process import REPO, BrokerProcess
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(120)
CLEANUP_MS = 500
PARTITIONS = 2


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    settings = {
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "5",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(CLEANUP_MS),
    }
    process = BrokerProcess(tmp_path_factory.mktemp("txn-clients") / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


def _create(bootstrap: str, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).values():
        future.result(20)


def _committed_offset(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        return int(consumer.committed([TopicPartition(topic, 0)], 20)[0].offset)
    finally:
        consumer.close()


def test_confluent_commit_abort_and_offsets(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap, "cf-out", "cf-in")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "cf-txn", "linger.ms": 5})
    producer.init_transactions(20)
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "cf-group"}).consumer_group_metadata()
    for round_ in range(3):
        producer.begin_transaction()
        for i in range(10):
            producer.produce("cf-out", value=f"commit-{round_}-{i}".encode(), partition=i % PARTITIONS)
        producer.send_offsets_to_transaction([TopicPartition("cf-in", 0, 10 * (round_ + 1))], group, 20)
        producer.commit_transaction(20)
        producer.begin_transaction()
        producer.produce("cf-out", value=f"aborted-{round_}".encode(), partition=1)
        producer.send_offsets_to_transaction([TopicPartition("cf-in", 0, 999)], group, 20)
        producer.flush(20)
        producer.abort_transaction(20)
    values = read_committed_values(bootstrap, "cf-out", PARTITIONS)
    assert values[1] == [f"commit-{r}-{i}".encode() for r in range(3) for i in range(1, 10, 2)]
    assert all(
        not v.startswith(b"aborted") or v in (b"aborted-0", b"aborted-1", b"aborted-2") for v in values[0]
    )
    assert _committed_offset(bootstrap, "cf-group", "cf-in") == 30  # the aborted 999 never counted


def test_kafka_python_commit_and_abort(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap, "kp-out")
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-txn", max_block_ms=20000)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        for i in range(6):
            producer.send("kp-out", value=f"c{i}".encode(), partition=0)
        producer.send_offsets_to_transaction(
            {kafka.TopicPartition("kp-in", 0): kafka.OffsetAndMetadata(6, "", -1)}, "kp-group"
        )
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send("kp-out", value=b"aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(timeout=5)
    assert read_committed_values(bootstrap, "kp-out", PARTITIONS)[0] == [f"c{i}".encode() for i in range(6)]
    # kafka-python's own read_committed consumer drops the aborted record too (it reads the aborted
    # transactions list itself, where librdkafka's reader does the same in C).
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level="read_committed", consumer_timeout_ms=3000
    )
    consumer.assign([kafka.TopicPartition("kp-out", 0)])
    consumer.seek_to_beginning()
    try:
        assert [m.value for m in consumer] == [f"c{i}".encode() for i in range(6)]
    finally:
        consumer.close()
    assert _committed_offset(bootstrap, "kp-group", "kp-in") == 6


def test_aiokafka_commit_and_abort(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap, "ak-out")

    async def run() -> None:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="ak-txn")
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(5):
                    await producer.send("ak-out", value=f"c{i}".encode(), partition=1)
                await producer.send_offsets_to_transaction(
                    {aiokafka.TopicPartition("ak-in", 0): 5}, "ak-group"
                )
            await producer.begin_transaction()
            await producer.send_and_wait("ak-out", value=b"aborted", partition=1)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    async def read() -> list[bytes]:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
        await consumer.start()
        try:
            partition = aiokafka.TopicPartition("ak-out", 1)
            consumer.assign([partition])
            await consumer.seek_to_beginning(partition)
            batches = await consumer.getmany(partition, timeout_ms=3000)
            return [m.value for m in batches.get(partition, []) if m.value is not None]
        finally:
            await consumer.stop()

    asyncio.run(run())
    assert read_committed_values(bootstrap, "ak-out", PARTITIONS)[1] == [f"c{i}".encode() for i in range(5)]
    assert asyncio.run(read()) == [f"c{i}".encode() for i in range(5)]  # aiokafka's reader agrees
    assert _committed_offset(bootstrap, "ak-group", "ak-in") == 5


def test_a_zombie_with_an_old_epoch_is_fenced(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap, "zombie-out")
    config = {"bootstrap.servers": bootstrap, "transactional.id": "zombie-txn"}
    zombie = Producer(config)
    zombie.init_transactions(20)
    zombie.begin_transaction()
    zombie.produce("zombie-out", value=b"from the zombie", partition=0)
    zombie.flush(20)
    successor = Producer(config)
    successor.init_transactions(20)  # aborts the zombie's transaction, bumps the epoch
    successor.begin_transaction()
    successor.produce("zombie-out", value=b"from the successor", partition=0)
    successor.commit_transaction(20)
    with pytest.raises(KafkaException) as raised:
        zombie.produce("zombie-out", value=b"too late", partition=0)
        zombie.commit_transaction(20)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower()
    assert read_committed_values(bootstrap, "zombie-out", PARTITIONS)[0] == [b"from the successor"]


_ABANDON = """
import os, sys
from confluent_kafka import Producer
config = {"transactional.id": "abandoned", "transaction.timeout.ms": 2000}
p = Producer({"bootstrap.servers": sys.argv[1], **config})
p.init_transactions(20)
p.begin_transaction()
p.produce("abandoned-out", value=b"never committed", partition=0)
p.flush(20)
os._exit(0)  # dies inside the transaction: no abort, no close
"""


def test_a_producer_killed_in_a_transaction_blocks_readers_no_longer_than_its_timeout(
    broker: BrokerProcess,
) -> None:
    bootstrap = broker.bootstrap
    _create(bootstrap, "abandoned-out")
    subprocess.run([sys.executable, "-c", _ABANDON, bootstrap], check=True, cwd=REPO, timeout=60)
    died = time.monotonic()  # its transaction began a little earlier: the bound below is generous
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce("abandoned-out", value=b"after", partition=0)
    plain.flush(20)
    # The LSO stays at the abandoned transaction until the coordinator aborts it (timeout + interval).
    limit = (2000 + CLEANUP_MS) / 1000 + 2  # plus the reads' own time
    while (values := read_committed_values(bootstrap, "abandoned-out", PARTITIONS))[0] != [b"after"]:
        assert values[0] == [], values
        assert time.monotonic() - died < limit
        time.sleep(0.2)
    waited = time.monotonic() - died
    assert 1.0 < waited < limit, waited  # held back until the timeout, released right after it
