"""A broker started from Apache Kafka 3.9's own config/server.properties, only its paths, port and
zookeeper.connect changed (issue #27 replaces Kafka brokers keeping their files): it starts, takes every
setting as given (DescribeConfigs reports each from the file, no "isn't a known config" warning), and
serves. socket.send.buffer.bytes and socket.receive.buffer.bytes in it were accepted at their default
and did nothing."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource

from odradek.config.properties import format_property
from tests.support.broker_process import REPO, _die_with_parent
from tests.support.ports import free_port
from tests.support.zookeeper import ZooKeeperServer

#: The settings of Kafka 3.9's config/server.properties (branch 3.9 of apache/kafka), in its order,
#: without its comments.
KAFKA_3_9_SERVER_PROPERTIES = {
    "broker.id": "0",
    "num.network.threads": "3",
    "num.io.threads": "8",
    "socket.send.buffer.bytes": "102400",
    "socket.receive.buffer.bytes": "102400",
    "socket.request.max.bytes": "104857600",
    "log.dirs": "/tmp/kafka-logs",
    "num.partitions": "1",
    "num.recovery.threads.per.data.dir": "1",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "log.retention.hours": "168",
    "log.retention.check.interval.ms": "300000",
    "zookeeper.connect": "localhost:2181",
    "zookeeper.connection.timeout.ms": "18000",
    "group.initial.rebalance.delay.ms": "0",
}


def test_a_broker_starts_and_serves_from_kafkas_own_server_properties(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    port = free_port()
    settings = {
        **KAFKA_3_9_SERVER_PROPERTIES,
        "log.dirs": str(tmp_path / "kafka-logs"),
        "zookeeper.connect": f"{zookeeper_server.connect_string}/odradek-{uuid.uuid4().hex[:8]}",
        # Kafka's file leaves listeners commented out (every interface, port 9092): a test stays on loopback
        "listeners": f"PLAINTEXT://127.0.0.2:{port}",
    }
    config = tmp_path / "server.properties"
    config.write_text("".join(format_property(key, value) for key, value in settings.items()), "utf-8")
    log_path = tmp_path / "broker.log"
    with open(log_path, "ab") as log:
        broker = subprocess.Popen(
            [sys.executable, "-m", "odradek.cli.main", "broker", "--config", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            preexec_fn=_die_with_parent,
        )
    try:
        _wait_listening(broker, ("127.0.0.2", port), log_path)
        bootstrap = f"127.0.0.2:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        (described,) = admin.describe_configs([ConfigResource("broker", "0")]).values()
        configs = described.result(30)
        for key, value in settings.items():
            assert configs[key].value == value, (key, configs[key].value)
            assert configs[key].source == ConfigSource.STATIC_BROKER_CONFIG.value, key
        # the socket buffers are the file's 100 KiB (Linux shows them doubled), not the kernel's own
        listing = subprocess.run(
            ["ss", "-Htmn", "state", "established", f"sport = :{port}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert listing and all(
            "rb204800," in line and "tb204800," in line for line in listing.splitlines() if "skmem" in line
        ), listing
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        producer.produce("from-kafkas-file", b"served")
        assert producer.flush(30) == 0
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe(["from-kafkas-file"])
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        consumer.close()
        assert message is not None and message.error() is None and message.value() == b"served"
    finally:
        broker.send_signal(signal.SIGTERM)
        try:
            broker.wait(30)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
    text = log_path.read_text(errors="replace")
    assert "isn't a known config" not in text, text[-3000:]


def _wait_listening(broker: subprocess.Popen[bytes], address: tuple[str, int], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if broker.poll() is not None:
            raise AssertionError(f"broker exited with {broker.returncode}:\n{log_path.read_text()[-3000:]}")
        with contextlib.suppress(OSError), socket.create_connection(address, timeout=0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"broker did not listen:\n{log_path.read_text()[-3000:]}")
