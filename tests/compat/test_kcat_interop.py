"""kcat (Debian's 1.7.1 on librdkafka 2.0.2) against odradek: -L, -P/-C with -K, -H, -z, -J, -o s@ts."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest
from confluent_kafka import Producer

from odradek.protocol.records import TimestampType
from tests.support.broker_process import BrokerProcess
from tests.support.interop import (
    INTEROP_PARTITIONS,
    SMALL_MESSAGE_MAX_BYTES,
    librdkafka_codecs,
    log_append_time_topic,
    small_messages_topic,
    stored_batches,
)
from tests.support.requirements import require_executable

require_executable("kcat", allow_module_level=True)
pytestmark = pytest.mark.timeout(60)


def kcat(
    broker: BrokerProcess, *args: str, stdin: bytes = b"", check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """Run kcat against the broker; fails the test (with kcat's stderr) on a non-zero exit if `check`."""
    result = subprocess.run(
        ["kcat", "-b", broker.bootstrap, *args], input=stdin, capture_output=True, timeout=30, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kcat {' '.join(args)} exited {result.returncode}: {result.stderr.decode()}")
    return result


def consume_json(broker: BrokerProcess, topic: str, *args: str) -> list[dict[str, Any]]:
    """Every message of `topic` from the given start (default: beginning) to the end, as kcat's JSON."""
    start = [] if "-o" in args else ["-o", "beginning"]
    # A short fetch wait: -e stops at the first empty fetch, which the broker holds for this long.
    fast = ("-X", "fetch.wait.max.ms=20")
    output = kcat(broker, "-C", "-t", topic, "-e", "-J", *fast, *start, *args).stdout.decode()
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_metadata_lists_the_broker_and_every_partition(interop_broker: BrokerProcess) -> None:
    kcat(interop_broker, "-P", "-t", "kcat-metadata", "-p", "0", stdin=b"hello\n")
    everything = json.loads(kcat(interop_broker, "-L", "-J").stdout)
    assert everything["brokers"] == [{"id": 1, "name": interop_broker.bootstrap}]
    assert everything["controllerid"] == 1
    topics = {t["topic"]: t for t in everything["topics"]}
    assert "kcat-metadata" in topics
    one = json.loads(kcat(interop_broker, "-L", "-J", "-t", "kcat-metadata").stdout)
    [topic] = one["topics"]
    assert [p["partition"] for p in topic["partitions"]] == list(range(INTEROP_PARTITIONS))
    assert all(p["leader"] == 1 and p["isrs"] == [{"id": 1}] for p in topic["partitions"])
    assert "error" not in topic


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_with_keys_headers_and_each_codec(
    interop_broker: BrokerProcess, codec: str
) -> None:
    topic = f"kcat-codec-{codec}"
    sent: dict[int, list[tuple[str, str]]] = {}
    for partition in range(INTEROP_PARTITIONS):
        lines = [
            (f"key-{partition}-{i}", f"value-{partition}-{i}-" + "z" * (i * 37 % 300)) for i in range(30)
        ]
        lines.append(("", f"empty key on {partition}"))
        sent[partition] = lines
        payload = "".join(f"{k}:{v}\n" for k, v in lines).encode()
        kcat(
            interop_broker,
            "-P", "-t", topic, "-p", str(partition), "-K:", "-z", codec,
            "-H", f"partition={partition}", "-H", "codec=" + codec, "-H", "repeated=1", "-H", "repeated=2",
            stdin=payload,
        )  # fmt: skip
    received = consume_json(interop_broker, topic)
    for partition, lines in sent.items():
        mine = [m for m in received if m["partition"] == partition]
        assert [m["offset"] for m in mine] == list(range(len(lines)))
        assert [(m["key"], m["payload"]) for m in mine] == lines
        assert {tuple(m["headers"]) for m in mine} == {
            ("partition", str(partition), "codec", codec, "repeated", "1", "repeated", "2")
        }
        assert {m["tstype"] for m in mine} == {"create"}
        stored = stored_batches(interop_broker.port, topic, partition)
        assert librdkafka_codecs(stored) == {codec}
        assert stored[-1].records[-1].key == b""  # "-K:" with nothing before the colon is an empty key


def test_offsets_by_time_with_o_s_at_timestamp(interop_broker: BrokerProcess) -> None:
    topic = "kcat-times"
    first = (int(time.time()) - 3600) * 1000
    producer = Producer({"bootstrap.servers": interop_broker.bootstrap, "linger.ms": 5})
    for i in range(20):
        producer.produce(topic, value=b"at-%d" % i, partition=0, timestamp=first + i * 1000)
    assert producer.flush(20) == 0
    for ts, offset in [(first - 5000, 0), (first + 7000, 7), (first + 6001, 7), (first + 19_000, 19)]:
        messages = consume_json(interop_broker, topic, "-p", "0", "-o", f"s@{ts}")
        assert [m["offset"] for m in messages] == list(range(offset, 20)), f"s@{ts}"
        assert messages[0]["ts"] == first + offset * 1000
    assert consume_json(interop_broker, topic, "-p", "0", "-o", f"s@{first + 20_000}") == []


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_each_acks_setting_delivers_everything(interop_broker: BrokerProcess, acks: str) -> None:
    topic = f"kcat-acks-{acks}"
    lines = [f"m{i}" for i in range(50)]
    kcat(interop_broker, "-P", "-t", topic, "-p", "1", "-X", f"acks={acks}", stdin="\n".join(lines).encode())
    received = consume_json(interop_broker, topic, "-p", "1")
    assert [(m["offset"], m["payload"]) for m in received] == list(enumerate(lines))


def test_an_idempotent_producer_writes_each_message_once(interop_broker: BrokerProcess) -> None:
    topic = "kcat-idempotent"
    lines = [f"once-{i}" for i in range(100)]
    kcat(
        interop_broker,
        "-P", "-t", topic, "-p", "2", "-X", "enable.idempotence=true", "-X", "batch.num.messages=9",
        stdin="\n".join(lines).encode(),
    )  # fmt: skip
    received = consume_json(interop_broker, topic, "-p", "2")
    assert [(m["offset"], m["payload"]) for m in received] == list(enumerate(lines))
    batches = stored_batches(interop_broker.port, topic, 2)
    assert len(batches) > 1 and len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
    assert [b.base_sequence for b in batches] == [b.base_offset for b in batches]


def test_log_append_time_is_reported_as_logappend(interop_broker: BrokerProcess) -> None:
    topic = log_append_time_topic(interop_broker.bootstrap, "kcat-append-time")
    before = int(time.time() * 1000)
    kcat(interop_broker, "-P", "-t", topic, "-p", "0", "-z", "gzip", stdin=b"one\ntwo\nthree\n")
    after = int(time.time() * 1000)
    received = consume_json(interop_broker, topic, "-p", "0")
    assert [m["payload"] for m in received] == ["one", "two", "three"]
    assert all(m["tstype"] == "logappend" and before <= m["ts"] <= after for m in received)
    batches = stored_batches(interop_broker.port, topic, 0)
    assert {b.timestamp_type for b in batches} == {TimestampType.LOG_APPEND_TIME}


def test_a_message_over_message_max_bytes_is_refused(interop_broker: BrokerProcess) -> None:
    topic = small_messages_topic(interop_broker.bootstrap, "kcat-too-large")
    refused = kcat(
        interop_broker,
        "-P",
        "-t",
        topic,
        "-p",
        "0",
        stdin=b"x" * (SMALL_MESSAGE_MAX_BYTES * 3),
        check=False,
    )
    assert refused.returncode != 0
    assert "Message size too large" in refused.stderr.decode()
    kcat(interop_broker, "-P", "-t", topic, "-p", "0", stdin=b"fits")
    assert [(m["offset"], m["payload"]) for m in consume_json(interop_broker, topic, "-p", "0")] == [
        (0, "fits")
    ]


def test_an_out_of_range_offset_follows_auto_offset_reset(interop_broker: BrokerProcess) -> None:
    topic = "kcat-reset"
    kcat(interop_broker, "-P", "-t", topic, "-p", "0", stdin=b"a\nb\nc\n")
    earliest = consume_json(
        interop_broker, topic, "-p", "0", "-o", "1000", "-X", "auto.offset.reset=earliest"
    )
    assert [(m["offset"], m["payload"]) for m in earliest] == [(0, "a"), (1, "b"), (2, "c")]
    latest = consume_json(interop_broker, topic, "-p", "0", "-o", "1000", "-X", "auto.offset.reset=latest")
    assert latest == []
    failed = kcat(
        interop_broker,
        "-C",
        "-t",
        topic,
        "-p",
        "0",
        "-o",
        "1000",
        "-e",
        "-X",
        "auto.offset.reset=error",
        check=False,
    )
    assert failed.returncode != 0 and "Offset out of range" in failed.stderr.decode()
