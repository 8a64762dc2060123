"""A broker started with nothing but `listeners` and `log.dirs` serves every client we test against.

It used to run as broker -1 (no node.id): Metadata listed a broker no client can connect to by id, so
producers and consumers never got going. Now it runs as broker 1, kept in meta.properties.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import REPO, free_port

pytestmark = pytest.mark.timeout(120)

MESSAGES = 20


@pytest.fixture
def minimal_broker(tmp_path: Path) -> Iterator[str]:
    """`odradek broker --config` a server.properties of two lines; yields the bootstrap address."""
    port = free_port()
    config = tmp_path / "server.properties"
    config.write_text(f"listeners=PLAINTEXT://127.0.0.1:{port}\nlog.dirs={tmp_path / 'data'}\n")
    command = [sys.executable, "-m", "odradek.cli.main", "broker", "--config", str(config)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with open(tmp_path / "broker.log", "wb") as log:  # a file, not a pipe nobody reads
        broker = subprocess.Popen(command, cwd=REPO, env=env, stderr=log)
    try:
        _wait_for_port(broker, port, tmp_path / "broker.log")
        yield f"127.0.0.1:{port}"
    finally:
        broker.terminate()
        assert broker.wait(20) == 0
    assert "broker.id=1" in (tmp_path / "data" / "meta.properties").read_text()


def test_minimal_config_broker_serves_kafka_python_confluent_aiokafka_and_kcat(minimal_broker: str) -> None:
    _kafka_python(minimal_broker)
    _confluent_kafka(minimal_broker)
    _aiokafka(minimal_broker)
    _kcat(minimal_broker)


def _kafka_python(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(MESSAGES):
        producer.send("minimal-kafka-python", value=b"v%d" % i).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        "minimal-kafka-python",
        bootstrap_servers=bootstrap,
        group_id="minimal-kafka-python",  # a group needs the coordinator, which is found by node id
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    values = [message.value for _, message in zip(range(MESSAGES), consumer, strict=False)]
    consumer.commit()
    consumer.close()
    assert values == [b"v%d" % i for i in range(MESSAGES)]


def _confluent_kafka(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(MESSAGES):
        producer.produce("minimal-confluent", value=b"v%d" % i)
    assert producer.flush(15) == 0
    brokers = producer.list_topics(timeout=10).brokers
    assert list(brokers) == [1]
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "minimal-confluent", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["minimal-confluent"])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 20
    while len(values) < MESSAGES and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    assert values == [b"v%d" % i for i in range(MESSAGES)]


def _aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def scenario() -> list[bytes | None]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        for i in range(MESSAGES):
            await producer.send_and_wait("minimal-aiokafka", b"v%d" % i)
        await producer.stop()
        consumer = AIOKafkaConsumer(
            "minimal-aiokafka",
            bootstrap_servers=bootstrap,
            group_id="minimal-aiokafka",
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            values: list[bytes | None] = []
            while len(values) < MESSAGES:
                message = await asyncio.wait_for(consumer.getone(), 20)
                values.append(message.value)
            return values
        finally:
            await consumer.stop()

    assert asyncio.run(scenario()) == [b"v%d" % i for i in range(MESSAGES)]


def _kcat(bootstrap: str) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (scripts/install-system-deps.sh installs it)")

    def kcat(*args: str, stdin: bytes = b"") -> bytes:
        result = subprocess.run(
            ["kcat", "-b", bootstrap, *args], input=stdin, capture_output=True, timeout=30
        )
        assert result.returncode == 0, result.stderr.decode()
        return result.stdout

    kcat("-P", "-t", "minimal-kcat", stdin=b"".join(b"v%d\n" % i for i in range(MESSAGES)))
    consumed = kcat("-C", "-t", "minimal-kcat", "-o", "beginning", "-e", "-X", "fetch.wait.max.ms=20")
    assert consumed.splitlines() == [b"v%d" % i for i in range(MESSAGES)]
    listed = json.loads(kcat("-L", "-J"))
    assert listed["brokers"] == [{"id": 1, "name": bootstrap}] and listed["controllerid"] == 1


def _wait_for_port(broker: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if broker.poll() is not None:
            raise RuntimeError(f"broker exited with {broker.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"broker did not listen within {timeout}s:\n{log.read_text(errors='replace')}")
