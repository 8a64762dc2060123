"""The quick start: the broker `make run` starts (config/server.properties) serves kcat and confluent-kafka
within seconds. Only the port and data directory are overridden, so tests never collide on 9092."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.broker_process import REPO, free_port
from tests.support.requirements import require_executable

#: "Within seconds", with room for a loaded machine (the suite runs three workers on two cores).
SERVED_WITHIN_SECONDS = 30.0


def test_make_run_broker_serves_kcat_and_confluent_kafka(tmp_path: Path) -> None:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "odradek.cli.main",
        "broker",
        "--config",
        str(REPO / "config" / "server.properties"),
        "--override",
        f"listeners=PLAINTEXT://127.0.0.1:{port}",
        "--override",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "--override",
        f"log.dirs={tmp_path / 'data'}",
    ]
    started = time.monotonic()
    with open(tmp_path / "broker.log", "wb") as log:  # a file, not a pipe nobody reads
        broker = subprocess.Popen(
            command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, stderr=log
        )
    try:
        bootstrap = f"127.0.0.1:{port}"
        producer = Producer({"bootstrap.servers": bootstrap, "socket.connection.setup.timeout.ms": 1000})
        producer.produce("quick-start", key=b"k", value=b"hello")
        assert producer.flush(SERVED_WITHIN_SECONDS) == 0
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "quick-start"})
        consumer.assign([TopicPartition("quick-start", 0, 0)])
        message = consumer.poll(SERVED_WITHIN_SECONDS)
        consumer.close()
        assert message is not None and message.error() is None and message.value() == b"hello"
        kcat = require_executable("kcat")
        listed = subprocess.run(
            [kcat, "-b", bootstrap, "-L", "-t", "quick-start"], capture_output=True, text=True, timeout=10
        )
        assert listed.returncode == 0 and 'topic "quick-start" with 1 partitions' in listed.stdout
        assert time.monotonic() - started < SERVED_WITHIN_SECONDS
    finally:
        broker.terminate()
        broker.wait(20)
