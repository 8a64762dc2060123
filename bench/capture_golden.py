"""Capture golden frames: real clients talk to odradek through a recording proxy.

    .venv/bin/python bench/capture_golden.py                   # all four clients
    .venv/bin/python bench/capture_golden.py --clients kcat aiokafka

Starts a broker on a free loopback port that advertises a proxy (tests/support/frame_proxy.py) in front
of it, then runs a short scenario with each client through the proxy: metadata, produce with every
codec the client has (and an idempotent producer), fetch, offsets by time, a consumer group (join,
sync, heartbeat, commit, fetch offsets, leave) and admin calls (create/describe/delete topics, groups,
configs). Every request and response frame is recorded and written, deduplicated, to

    tests/unit/protocol/golden/<client>/<api>-v<version>-<request|response>-<n>.bin

(the frame without its size prefix; a few per api and version, chosen so that each codec and each
kind of answer appears once). `tests/unit/protocol/test_golden_frames.py` decodes and re-encodes them.
The client folders are replaced on each run; MANIFEST.json records the client versions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.frames import decode_request, decode_response
from odradek.protocol.records import iter_batch_headers
from tests.support.broker_process import BrokerProcess, free_port
from tests.support.frame_proxy import Exchange, FrameProxy

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "unit" / "protocol" / "golden"
CLIENTS = ("confluent", "kafka_python", "aiokafka", "kcat")
#: Frames kept per signature (api, version, direction and what the frame carries) and per api/version.
PER_SIGNATURE = 2
PER_API_VERSION = 8
#: Larger frames are left out to keep the folder small (fetch responses full of records, mostly).
MAX_FRAME_BYTES = 32 * 1024
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: Records each client's scenario writes to its topic: six per codec and one idempotent.
RECORDS = len(CODECS) * 6 + 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    parser.add_argument("--out", type=Path, default=GOLDEN)
    args = parser.parse_args(argv)

    recorded: list[tuple[str, Exchange]] = []
    labels: dict[int, str] = {}
    current = {"client": ""}

    def record(exchange: Exchange) -> None:
        client = labels.setdefault(exchange.connection, current["client"])
        recorded.append((client, exchange))

    proxy_port = free_port()
    with tempfile.TemporaryDirectory(prefix="odradek-golden-") as scratch:
        broker = BrokerProcess(
            Path(scratch) / "data",
            {
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                "num.partitions": "2",
                "offsets.topic.num.partitions": "1",
                "group.initial.rebalance.delay.ms": "0",
            },
        ).start()
        proxy = FrameProxy(broker.port, record, port=proxy_port).start()
        bootstrap = f"127.0.0.1:{proxy_port}"
        try:
            for client in args.clients:
                current["client"] = client
                started = time.monotonic()
                SCENARIOS[client](bootstrap)
                print(f"{client}: scenario ran in {time.monotonic() - started:.1f}s", file=sys.stderr)
        finally:
            proxy.stop()
            broker.stop()
    if proxy.errors:
        print("proxy errors:\n  " + "\n  ".join(proxy.errors[:20]), file=sys.stderr)
    write_frames(recorded, args.clients, args.out)
    for client in args.clients:
        files = sorted((args.out / client).glob("*.bin"))
        size = sum(f.stat().st_size for f in files)
        print(f"{client}: {len(files)} frames, {size} bytes", file=sys.stderr)
    write_manifest(args.out, args.clients)
    return 0


# ----- choosing and writing frames ---------------------------------------------------------------


def write_frames(recorded: list[tuple[str, Exchange]], clients: list[str], out: Path) -> None:
    candidates: dict[tuple[Any, ...], list[bytes]] = defaultdict(list)
    seen: set[tuple[str, bytes]] = set()
    for client, exchange in recorded:
        if client not in clients or exchange.api_key not in ApiKey._value2member_map_:
            continue
        frame = exchange.frame
        if len(frame) > MAX_FRAME_BYTES:
            continue
        anonymous = _without_correlation_id(exchange)
        if (client, anonymous) in seen:
            continue
        seen.add((client, anonymous))
        signature = (client, exchange.api_key, exchange.api_version, exchange.direction, _detail(exchange))
        if len(candidates[signature]) < PER_SIGNATURE:
            candidates[signature].append(frame)
    # Per api and version: the first frame of every signature, then second ones, up to the cap.
    kept: dict[tuple[Any, ...], list[bytes]] = defaultdict(list)
    per_api_version: dict[tuple[Any, ...], int] = defaultdict(int)
    for round_ in range(PER_SIGNATURE):
        for signature, frames in candidates.items():
            key = signature[:4]
            if round_ < len(frames) and per_api_version[key] < PER_API_VERSION:
                kept[signature].append(frames[round_])
                per_api_version[key] += 1
    for client in clients:
        shutil.rmtree(out / client, ignore_errors=True)
        (out / client).mkdir(parents=True)
    numbers: dict[tuple[str, int, int, str], int] = defaultdict(int)
    for (client, api_key, version, direction, _), frames in sorted(kept.items(), key=lambda kv: repr(kv[0])):
        for frame in frames:
            n = numbers[(client, api_key, version, direction)]
            numbers[(client, api_key, version, direction)] += 1
            name = f"{ApiKey(api_key).name.lower()}-v{version}-{direction}-{n}.bin"
            (out / client / name).write_bytes(frame)


def _without_correlation_id(exchange: Exchange) -> bytes:
    frame = bytearray(exchange.frame)
    start = 4 if exchange.direction == "request" else 0
    frame[start : start + 4] = b"\0\0\0\0"
    return bytes(frame)


def _detail(exchange: Exchange) -> object:
    """What makes two frames of one api/version worth keeping both: codecs carried, the kind of answer."""
    try:
        if exchange.direction == "request":
            _, body = decode_request(exchange.frame)
        else:
            _, body = decode_response(exchange.frame, exchange.api_key, exchange.api_version)
    except Exception as error:  # kept: a frame our codec cannot read is exactly what golden tests are for
        return f"undecodable: {type(error).__name__}"
    if exchange.api_key == ApiKey.PRODUCE and exchange.direction == "request":
        return ("acks", body.acks, *_codecs(p.records for t in body.topic_data for p in t.partition_data))
    if exchange.api_key == ApiKey.FETCH and exchange.direction == "response":
        return _codecs(p.records for t in body.responses for p in t.partitions)
    if exchange.api_key == ApiKey.METADATA and exchange.direction == "request":
        return "all" if body.topics is None else len(body.topics)
    error_code = getattr(body, "error_code", None)
    return ("error", error_code) if error_code else None


def _codecs(records: Any) -> tuple[str, ...]:
    found: set[str] = set()
    for data in records:
        if not data:
            continue
        try:
            found |= {header.compression.name for header in iter_batch_headers(data)}
        except Exception:
            found.add("legacy-or-partial")
    return tuple(sorted(found)) or ("empty",)


def write_manifest(out: Path, clients: list[str]) -> None:
    import aiokafka
    import confluent_kafka
    import kafka

    manifest_path = out / "MANIFEST.json"
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    kcat_about = subprocess.run(["kcat", "-V"], capture_output=True, text=True, check=False).stdout
    kcat_versions = re.search(r"Version (\S+).*?librdkafka (\S+)", kcat_about, re.S)
    confluent_version: Any = confluent_kafka.version()  # a str at run time, a tuple in the stubs
    if isinstance(confluent_version, tuple):
        confluent_version = confluent_version[0]
    versions = {
        "confluent": f"confluent-kafka {confluent_version}, librdkafka {confluent_kafka.libversion()[0]}",
        "kafka_python": f"kafka-python {kafka.__version__}",
        "aiokafka": f"aiokafka {aiokafka.__version__}",
        "kcat": f"kcat {kcat_versions[1]}, librdkafka {kcat_versions[2]}" if kcat_versions else "kcat",
    }
    for client in clients:
        manifest[client] = {"client": versions[client], "frames": len(list((out / client).glob("*.bin")))}
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


# ----- scenarios -----------------------------------------------------------------------------------


def _attempt(what: str, action: Callable[[], object]) -> None:
    """Run one step of a scenario; a failure is reported and the capture goes on."""
    try:
        action()
    except Exception as error:
        print(f"  {what}: {type(error).__name__}: {error}", file=sys.stderr)


def _timestamps(count: int) -> list[int]:
    first = (int(time.time()) - 3600) * 1000
    return [first + i * 1000 for i in range(count)]


def confluent_scenario(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin._config import ConfigResource
    from confluent_kafka.cimpl import NewPartitions, NewTopic

    topic = "golden-confluent"
    for codec in CODECS:
        producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})
        for i, ts in enumerate(_timestamps(6)):
            producer.produce(
                topic,
                key=b"k%d" % i,
                value=b"%s-%d " % (codec.encode(), i) * 20,
                partition=i % 2,
                headers=[("codec", codec.encode())],
                timestamp=ts,
            )
        producer.flush(10)
    idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    idempotent.produce(topic, value=b"idempotent", partition=0)
    idempotent.flush(10)
    fire_and_forget = Producer({"bootstrap.servers": bootstrap, "acks": 0})
    fire_and_forget.produce(topic, value=b"acks=0", partition=1)
    fire_and_forget.flush(10)

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "golden-confluent-assign", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
    _drain(lambda: consumer.consume(100, 0.2), 30)
    _attempt(
        "offsets_for_times",
        lambda: consumer.offsets_for_times([TopicPartition(topic, 0, _timestamps(3)[2])], 10),
    )
    _attempt("list_topics", lambda: consumer.list_topics(timeout=10))
    consumer.close()

    group = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "golden-confluent-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    group.subscribe([topic])
    _drain(lambda: group.consume(100, 0.3), 20)
    _attempt("commit", lambda: group.commit(asynchronous=False))
    _attempt("committed", lambda: group.committed([TopicPartition(topic, 0)], 10))
    group.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    made = "golden-confluent-admin"
    _attempt("create_topics", lambda: admin.create_topics([NewTopic(made, 1, 1)])[made].result(10))
    _attempt("create_partitions", lambda: admin.create_partitions([NewPartitions(made, 3)])[made].result(10))
    resource = ConfigResource(ConfigResource.Type.TOPIC, made)
    _attempt("describe_configs", lambda: admin.describe_configs([resource])[resource].result(10))
    _attempt("list_consumer_groups", lambda: admin.list_consumer_groups().result(10))
    _attempt(
        "describe_consumer_groups",
        lambda: admin.describe_consumer_groups(["golden-confluent-group"])["golden-confluent-group"].result(
            10
        ),
    )
    _attempt("delete_topics", lambda: admin.delete_topics([made])[made].result(10))


def kafka_python_scenario(bootstrap: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition, codec
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

    topic = "golden-kafka-python"
    available = {
        "none": True,
        "gzip": codec.has_gzip(),
        "snappy": codec.has_snappy(),
        "lz4": codec.has_lz4(),
        "zstd": codec.has_zstd(),
    }
    for name in CODECS:
        if not available[name]:
            print(f"  kafka-python: no {name} library, skipped", file=sys.stderr)
            continue
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, compression_type=None if name == "none" else name
        )
        for i, ts in enumerate(_timestamps(6)):
            producer.send(
                topic,
                key=b"k%d" % i,
                value=b"%s-%d " % (name.encode(), i) * 20,
                partition=i % 2,
                headers=[("codec", name.encode())],
                timestamp_ms=ts,
            )
        producer.flush(10)
        producer.close(5)
    idempotent = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    idempotent.send(topic, value=b"idempotent", partition=0).get(10)
    idempotent.close(5)

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partitions = [TopicPartition(topic, p) for p in (0, 1)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    _drain(lambda: [r for rs in consumer.poll(200).values() for r in rs], 20)
    _attempt("offsets_for_times", lambda: consumer.offsets_for_times({partitions[0]: _timestamps(3)[2]}))
    _attempt("end_offsets", lambda: consumer.end_offsets(partitions))
    consumer.close()

    group = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id="golden-kafka-python-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    _drain(lambda: [r for rs in group.poll(300).values() for r in rs], 20)
    _attempt("commit", group.commit)
    group.close()

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    made = "golden-kafka-python-admin"
    _attempt("create_topics", lambda: admin.create_topics([NewTopic(made, 1, 1)]))
    _attempt(
        "describe_configs", lambda: admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, made)])
    )
    _attempt("list_groups", admin.list_groups)
    _attempt("describe_groups", lambda: admin.describe_groups(["golden-kafka-python-group"]))
    _attempt("list_group_offsets", lambda: admin.list_group_offsets("golden-kafka-python-group"))
    _attempt("describe_cluster", admin.describe_cluster)
    _attempt("create_partitions", lambda: admin.create_partitions({made: NewPartitions(3)}))
    _attempt("delete_topics", lambda: admin.delete_topics([made]))
    admin.close()


def aiokafka_scenario(bootstrap: str) -> None:
    asyncio.run(_aiokafka_scenario(bootstrap))


async def _aiokafka_scenario(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.structs import TopicPartition

    topic = "golden-aiokafka"
    for name in CODECS:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, compression_type=None if name == "none" else name
        )
        await producer.start()
        for i, ts in enumerate(_timestamps(6)):
            await producer.send(
                topic,
                key=b"k%d" % i,
                value=b"%s-%d " % (name.encode(), i) * 20,
                partition=i % 2,
                headers=[("codec", name.encode())],
                timestamp_ms=ts,
            )
        await producer.stop()
    idempotent = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
    await idempotent.start()
    await idempotent.send_and_wait(topic, b"idempotent", partition=0)
    await idempotent.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    partitions = [TopicPartition(topic, p) for p in (0, 1)]
    consumer.assign(partitions)
    await consumer.seek_to_beginning()
    deadline = time.monotonic() + 20
    received = 0
    while received < RECORDS and time.monotonic() < deadline:
        received += sum(len(v) for v in (await consumer.getmany(timeout_ms=300)).values())
    try:
        await consumer.offsets_for_times({partitions[0]: _timestamps(3)[2]})
    except Exception as error:
        print(f"  offsets_for_times: {error}", file=sys.stderr)
    await consumer.stop()

    group = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id="golden-aiokafka-group",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await group.start()
    deadline = time.monotonic() + 20
    received = 0
    while received < RECORDS and time.monotonic() < deadline:
        received += sum(len(v) for v in (await group.getmany(timeout_ms=300)).values())
    try:
        await group.commit()
    except Exception as error:
        print(f"  commit: {error}", file=sys.stderr)
    await group.stop()

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    made = "golden-aiokafka-admin"
    for what, call in (
        ("create_topics", lambda: admin.create_topics([NewTopic(made, 1, 1)])),
        ("list_consumer_groups", admin.list_consumer_groups),
        ("describe_consumer_groups", lambda: admin.describe_consumer_groups(["golden-aiokafka-group"])),
        ("delete_topics", lambda: admin.delete_topics([made])),
    ):
        try:
            await call()
        except Exception as error:
            print(f"  {what}: {type(error).__name__}: {error}", file=sys.stderr)
    await admin.close()


def kcat_scenario(bootstrap: str) -> None:
    topic = "golden-kcat"

    def kcat(*args: str, stdin: bytes = b"") -> None:
        result = subprocess.run(
            ["kcat", "-b", bootstrap, *args], input=stdin, capture_output=True, timeout=60, check=False
        )
        if result.returncode != 0:
            print(f"  kcat {' '.join(args)}: {result.stderr.decode()[:300]}", file=sys.stderr)

    kcat("-L")
    for codec in CODECS:
        lines = "".join(f"k{i}:" + f"{codec}-{i} " * 20 + "\n" for i in range(6)).encode()
        for partition in ("0", "1"):
            kcat("-P", "-t", topic, "-p", partition, "-K:", "-H", f"codec={codec}", "-z", codec, stdin=lines)
    kcat("-P", "-t", topic, "-p", "0", "-X", "enable.idempotence=true", stdin=b"idempotent\n")
    kcat("-C", "-t", topic, "-o", "beginning", "-e", "-J")
    kcat("-C", "-t", topic, "-p", "0", "-o", f"s@{_timestamps(1)[0]}", "-e")
    kcat("-G", "golden-kcat-group", "-X", "auto.offset.reset=earliest", "-e", topic)


def _drain(poll: Callable[[], Any], seconds: float) -> None:
    """Poll until a poll returns nothing after something arrived, or `seconds` pass."""
    deadline = time.monotonic() + seconds
    got_any = False
    while time.monotonic() < deadline:
        batch = poll()
        if batch:
            got_any = True
        elif got_any:
            return


SCENARIOS: dict[str, Callable[[str], None]] = {
    "confluent": confluent_scenario,
    "kafka_python": kafka_python_scenario,
    "aiokafka": aiokafka_scenario,
    "kcat": kcat_scenario,
}


if __name__ == "__main__":
    sys.exit(main())
