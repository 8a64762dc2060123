"""Client quotas end to end: set with `odradek quotas`, enforced on confluent-kafka producers and
consumers (slowed to the byte rate, told throttle_time_ms through librdkafka's throttle callback), not
on clients without a quota, and kept in the log dir across a restart.

The broker measures over 2 windows of 1 s (quota.window.num, quota.window.size.seconds) so that a
few hundred kilobytes show the rate: with Kafka's default 11 windows a client may first burst ten
seconds' worth.
"""

from __future__ import annotations

import socket
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.cli.main import main as odradek
from odradek.cluster.metadata.client_quotas import FILE_NAME
from odradek.protocol.frames import encode_request
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.metadata import MetadataRequest
from tests.integration.test_broker_startup_errors import assert_refused_in_one_line, run_broker
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.raw_client import RawClient
from tests.support.requirements import require_module

pytestmark = pytest.mark.timeout(180)

RATE = 100 * 1024  # bytes per second
VALUE = b"v" * 1000
MESSAGES = 400  # about 400 KB: four seconds at the rate


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    require_module("confluent_kafka")
    settings = {"quota.window.num": "2", "quota.window.size.seconds": "1", "metrics.port": str(free_port())}
    process = BrokerProcess(tmp_path / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


def _quotas(broker: BrokerProcess, *args: str) -> None:
    assert odradek(["quotas", *args, "--bootstrap-server", broker.bootstrap]) == 0


def _produce(broker: BrokerProcess, topic: str, client_id: str) -> tuple[float, list[float]]:
    """Seconds to produce MESSAGES values, and the throttle times librdkafka reported."""
    from confluent_kafka import Producer

    throttles: list[float] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": client_id,
            "linger.ms": 5,
            "batch.size": 16 * 1024,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    started = time.monotonic()
    for _ in range(MESSAGES):
        while True:
            try:
                producer.produce(topic, VALUE)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    elapsed = time.monotonic() - started
    producer.poll(0)
    return elapsed, throttles


def _consume(broker: BrokerProcess, topic: str, client_id: str) -> tuple[float, list[float]]:
    from confluent_kafka import Consumer

    throttles: list[float] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "client.id": client_id,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    try:
        consumer.subscribe([topic])
        received = 0
        started: float | None = None
        deadline = time.monotonic() + 120
        while received < MESSAGES and time.monotonic() < deadline:
            message: Any = consumer.poll(0.5)
            if message is None or message.error():
                continue
            if started is None:
                started = time.monotonic()  # from the first record: the group join is not the quota's
            received += 1
        assert received == MESSAGES
        assert started is not None
        return time.monotonic() - started, throttles
    finally:
        consumer.close()


def test_a_producer_is_held_to_its_byte_rate_and_an_unlimited_one_is_not(broker: BrokerProcess) -> None:
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    _quotas(broker, "alter", "--client", "slow-producer", "--add-config", f"producer_byte_rate={RATE}")
    elapsed, throttles = _produce(broker, topic, "slow-producer")
    rate = MESSAGES * len(VALUE) / elapsed
    assert throttles and max(throttles) > 0, "the broker told the producer of no throttle"
    assert rate < 1.6 * RATE, f"{rate:.0f} B/s against a quota of {RATE} B/s"
    free_elapsed, free_throttles = _produce(broker, topic, "free-producer")
    assert not [t for t in free_throttles if t > 0]
    assert free_elapsed < elapsed


def test_a_consumer_is_held_to_its_byte_rate_and_an_unlimited_one_is_not(broker: BrokerProcess) -> None:
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    _produce(broker, topic, "loader")
    _quotas(broker, "alter", "--client", "slow-consumer", "--add-config", f"consumer_byte_rate={RATE}")
    elapsed, throttles = _consume(broker, topic, "slow-consumer")
    rate = MESSAGES * len(VALUE) / elapsed
    assert throttles and max(throttles) > 0, "the broker told the consumer of no throttle"
    assert rate < 1.6 * RATE, f"{rate:.0f} B/s against a quota of {RATE} B/s"
    free_elapsed, free_throttles = _consume(broker, topic, "free-consumer")
    assert not [t for t in free_throttles if t > 0]
    assert free_elapsed < elapsed


def test_quotas_survive_a_restart(broker: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    _quotas(broker, "alter", "--user", "alice", "--client", "app", "--add-config", "producer_byte_rate=2048")
    _quotas(broker, "alter", "--user-defaults", "--add-config", "request_percentage=12.5")
    _quotas(
        broker, "alter", "--client-defaults", "--add-config", "consumer_byte_rate=4096,producer_byte_rate=1"
    )
    _quotas(broker, "alter", "--client-defaults", "--delete-config", "producer_byte_rate")
    _quotas(broker, "alter", "--ip-defaults", "--add-config", "connection_creation_rate=1000")
    capsys.readouterr()
    broker.restart()
    _quotas(broker, "describe")
    lines = capsys.readouterr().out.split("\n")
    assert [line.split() for line in lines if line] == [
        ["ENTITY", "QUOTA", "VALUE"],
        ["client-id=<default>", "consumer_byte_rate", "4096"],
        ["ip=<default>", "connection_creation_rate", "1000"],
        ["user=<default>", "request_percentage", "12.5"],
        ["user=alice,client-id=app", "producer_byte_rate", "2048"],
    ]
    _quotas(broker, "describe", "--user", "alice")  # strict: the (alice, app) pair is not alice's own
    assert capsys.readouterr().out == ""


def test_a_request_quota_throttles_and_mutes_the_connection_for_the_throttle_time(
    broker: BrokerProcess,
) -> None:
    # KIP-219: the answer comes at once with throttle_time_ms, then the broker reads nothing more from
    # the connection for that long. 0.001 % of a second is exceeded by any request; the request
    # quota's throttle is at most one window (1 s here).
    _quotas(broker, "alter", "--client", "busy", "--add-config", "request_percentage=0.001")
    with RawClient(broker.port, client_id="busy") as busy:
        first = busy.request(MetadataRequest(topics=[]), 12)
        assert first.throttle_time_ms == 1000
        started = time.monotonic()
        second = busy.request(MetadataRequest(topics=[]), 12)
        assert time.monotonic() - started >= 0.9, "the connection was not muted"
        assert second.throttle_time_ms > 0
    with RawClient(broker.port, client_id="idle") as idle:
        assert idle.request(MetadataRequest(topics=[]), 12).throttle_time_ms == 0
    scraped = urllib.request.urlopen(
        f"http://127.0.0.1:{broker.overrides['metrics.port']}/metrics", timeout=10
    )
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in scraped.read().decode().splitlines()
        if line.startswith("odradek_client_quota")
    }
    labels = '{client_id="busy",quota="request",user=""}'
    assert samples[f"odradek_client_quota_throttled_responses_total{labels}"] >= 2
    assert samples[f"odradek_client_quota_throttle_time_ms_total{labels}"] >= 1000
    # Measured as every client is while some request quota exists (as Kafka), never throttled.
    assert (
        samples['odradek_client_quota_throttled_responses_total{client_id="idle",quota="request",user=""}']
        == 0
    )


def test_new_connections_over_an_ips_connection_creation_rate_are_held_then_closed(
    broker: BrokerProcess,
) -> None:
    # Clients from 127.0.0.5 (a loopback address of their own) may open 1 connection per second.
    _quotas(broker, "alter", "--ip", "127.0.0.5", "--add-config", "connection_creation_rate=1")

    def api_versions_from(source: str) -> tuple[bool, float]:
        """Whether a new connection from `source` is answered, and how long it took to learn."""
        started = time.monotonic()
        with socket.create_connection(
            ("127.0.0.1", broker.port), timeout=10, source_address=(source, 0)
        ) as sock:
            sock.sendall(encode_request(ApiVersionsRequest(), 0, 1, "ip-test"))
            try:  # a throttled connection is closed unanswered (reset: the request was never read)
                answered = len(sock.recv(4)) == 4
            except ConnectionResetError:
                answered = False
        return answered, time.monotonic() - started

    assert api_versions_from("127.0.0.5") == (True, pytest.approx(0, abs=5))
    answered, waited = api_versions_from("127.0.0.5")
    assert not answered
    assert 0.2 <= waited <= 5  # held for the throttle time (at most one 1 s window), then closed
    for _ in range(5):  # other addresses have no quota
        assert api_versions_from("127.0.0.6")[0]


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"version": 1, "quotas": [{"entity": [["user", "a"]], "config": {"producer_byte_rate": "fast"}}]}',
        '{"version": 1, "quotas": [{"entity": [["group", "g"]], "config": {}}]}',
    ],
)
def test_a_corrupt_quota_file_refuses_start_up_in_one_line(tmp_path: Path, content: str) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / FILE_NAME).write_text(content)
    result = run_broker(
        "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={log_dir}"
    )
    assert_refused_in_one_line(result, FILE_NAME)
