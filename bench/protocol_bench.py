"""Protocol codec benchmark: odradek against kafka-python's protocol classes on the same messages.

    .venv/bin/python bench/protocol_bench.py                  # print the table
    .venv/bin/python bench/protocol_bench.py --write-docs     # and write it into docs/bench/protocol.md

Three messages, each decoded and encoded by both codecs in the same process:

- a Produce v9 request carrying one 16 KiB RecordBatch (built with kafka-python's DefaultRecordBatchBuilder);
- a Fetch v12 response with 10 partitions, each carrying a 2 KiB RecordBatch;
- a Metadata v12 response for 3 brokers and 100 topics x 10 partitions (3 replicas, 3 in sync).

Before timing, both codecs must produce identical bytes for each message and read each other's bytes.
An operation is one decode of the bytes plus one encode of the decoded object (into a new bytearray, which
is how the broker encodes and what kafka-python's encode() returns); each figure is the
median of several rounds (the two codecs take turns within a round), timed in CPU seconds of this
process so that other work on the machine does not count against either.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import re
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse as KafkaFetchResponse
from kafka.protocol.metadata.metadata import MetadataResponse as KafkaMetadataResponse
from kafka.protocol.producer.produce import ProduceRequest as KafkaProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from odradek.protocol.codec import encode_into_for
from odradek.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from odradek.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.schema import Message

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs" / "bench" / "protocol.md"
SECTION_START = "<!-- protocol-bench:start -->"
SECTION_END = "<!-- protocol-bench:end -->"
GOAL = 5.0


@dataclass
class Case:
    name: str
    ours_cls: type[Message]
    theirs_cls: Any
    version: int
    message: Message


@dataclass
class ThirdCodec:
    """Another codec for one message, timed alongside the two (`protocol_ceiling.py`'s hand-written ones)."""

    decode: Callable[[bytes], Any]
    encode: Callable[[Any, bytearray], None]


@dataclass
class Result:
    case: Case
    size: int
    ours_decode: float  # seconds per operation
    ours_encode: float
    theirs_decode: float
    theirs_encode: float
    third_decode: float | None = None
    third_encode: float | None = None

    @property
    def ours_ops(self) -> float:
        return 1 / (self.ours_decode + self.ours_encode)

    @property
    def theirs_ops(self) -> float:
        return 1 / (self.theirs_decode + self.theirs_encode)

    @property
    def ratio(self) -> float:
        return self.ours_ops / self.theirs_ops


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.2, help="minimum length of one repeat")
    parser.add_argument("--write-docs", action="store_true", help=f"write the table into {DOCS}")
    args = parser.parse_args(argv)
    facts = machine_facts()  # before the run, so the load average is other processes', not ours
    messages = cases()
    # The benchmark's own objects (the messages, both codecs' modules) are set aside from collection:
    # a full collection during a timing would otherwise walk them, on whichever codec's clock it fell.
    gc.collect()
    gc.freeze()
    results = [measure(case, args.repeats, args.seconds) for case in messages]
    table = markdown_table(results)
    metadata = next(r for r in results if r.case.ours_cls is MetadataResponse)
    table += "\n\n" + floor_line(metadata, metadata_floor(metadata.case, args.repeats, args.seconds))
    print(table)
    if args.write_docs:
        command = " ".join([".venv/bin/python", "bench/protocol_bench.py", *(argv or sys.argv[1:])])
        write_docs(section(table, command, args.repeats, facts))
        print(f"wrote {DOCS.relative_to(REPO_ROOT)}")
    for result in results:
        if result.ratio < GOAL:
            print(f"below the {GOAL:.0f}x goal: {result.case.name} ({result.ratio:.1f}x)")
    return 0


# ----- the messages ----------------------------------------------------------------------------------


def record_batch(total_bytes: int, value_size: int = 100) -> bytes:
    """A real, uncompressed v2 RecordBatch of about `total_bytes`, written by kafka-python."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    offset = 0
    while builder.size() < total_bytes - value_size - 40:
        key = f"key-{offset}".encode()
        builder.append(
            offset, timestamp=1_700_000_000_000 + offset, key=key, value=b"v" * value_size, headers=[]
        )
        offset += 1
    return bytes(builder.build())


def cases() -> list[Case]:
    produce = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="bench", partition_data=[PartitionProduceData(index=0, records=record_batch(16384))]
            )
        ],
    )
    fetch = FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=12345,
        responses=[
            FetchableTopicResponse(
                topic="bench",
                partitions=[
                    PartitionData(
                        partition_index=index,
                        error_code=0,
                        high_watermark=1_000_000 + index,
                        last_stable_offset=1_000_000 + index,
                        log_start_offset=0,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        records=record_batch(2048),
                    )
                    for index in range(10)
                ],
            )
        ],
    )
    brokers = [
        MetadataResponseBroker(node_id=n, host=f"broker-{n}.example", port=9092, rack=None) for n in range(3)
    ]
    metadata = MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id="odradek-bench",
        controller_id=0,
        topics=[
            MetadataResponseTopic(
                error_code=0,
                name=f"topic-{t:03d}",
                topic_id=uuid.UUID(int=t + 1),
                is_internal=False,
                partitions=[
                    MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=(t + p) % 3,
                        leader_epoch=5,
                        replica_nodes=[(t + p + r) % 3 for r in range(3)],
                        isr_nodes=[(t + p + r) % 3 for r in range(3)],
                        offline_replicas=[],
                    )
                    for p in range(10)
                ],
                topic_authorized_operations=-(2**31),
            )
            for t in range(100)
        ],
    )
    return [
        Case("Produce v9 request, one 16 KiB batch", ProduceRequest, KafkaProduceRequest, 9, produce),
        Case("Fetch v12 response, 10 partitions x 2 KiB", FetchResponse, KafkaFetchResponse, 12, fetch),
        Case(
            "Metadata v12 response, 100 topics x 10 partitions",
            MetadataResponse,
            KafkaMetadataResponse,
            12,
            metadata,
        ),
    ]


# ----- measuring -------------------------------------------------------------------------------------


def measure(case: Case, repeats: int, seconds: float, third: ThirdCodec | None = None) -> Result:
    version = case.version
    data = case.message.encode(version)
    theirs = their_decoding(case, data)
    # Same bytes both ways before any timing.
    if bytes(theirs.encode(version=version)) != data:
        raise SystemExit(f"{case.name}: kafka-python re-encodes our bytes differently")
    if case.ours_cls.decode(bytes(theirs.encode(version=version)), version) != case.message:
        raise SystemExit(f"{case.name}: we read kafka-python's bytes differently")
    ours = case.ours_cls.decode(data, version)
    # Into a new bytearray, as the broker encodes (frames.encode_response) and as kafka-python's
    # encode() returns; Message.encode() would add a copy of the whole body into an immutable bytes.
    encode_into = encode_into_for(case.ours_cls, version)
    spacers: list[bytes] = []

    def new_placement() -> None:
        """The bytes and both decoded objects again, at new addresses (see `SPACER_STEP`)."""
        nonlocal data, ours, theirs
        spacers.append(bytes(1024 + SPACER_STEP * len(spacers)))
        data = bytes(bytearray(data))
        ours = case.ours_cls.decode(data, version)
        theirs = their_decoding(case, data)
        gc.collect()
        gc.freeze()  # the fixtures stay out of collections, as in main()

    def ours_decode() -> None:
        case.ours_cls.decode(data, version)

    def ours_encode() -> None:
        encode_into(ours, bytearray())

    def theirs_decode() -> None:
        case.theirs_cls.decode(data, version=version)

    def theirs_encode() -> None:
        theirs.encode(version=version)

    operations = [ours_decode, ours_encode, theirs_decode, theirs_encode]
    if third is not None:
        third_decode, third_encode = third.decode, third.encode
        operations += [lambda: third_decode(data), lambda: third_encode(ours, bytearray())]
    return Result(case, len(data), *timed(operations, repeats, seconds, new_placement))


#: Each round decodes a new copy of the message, placed after one more spacer of 1 KiB plus this many
#: bytes times the round's number. Copying a large value (the decoder slicing records out of the frame,
#: the encoder appending them) runs several times slower when the destination lies just past the source
#: modulo 4 KiB (the CPU takes loads for the stores just before them: "4K aliasing"). Where malloc
#: places each copy depends on the heap's history, so one layout could make a whole run's Produce decode
#: 7.0 µs instead of 2.2 for the same code (measured: copies landing 11 bytes past their source modulo
#: 4096), for both codecs alike. With a new placement each round, the median is the usual case.
SPACER_STEP = 272


def their_decoding(case: Case, data: bytes) -> Any:
    theirs = case.theirs_cls.decode(data, version=case.version)
    theirs._header = None  # a decoded kafka-python message lacks the slot its encode() reads
    return theirs


def timed(
    operations: list[Callable[[], None]],
    repeats: int,
    seconds: float,
    new_round: Callable[[], None] | None = None,
) -> list[float]:
    """Median CPU seconds per call of each operation over `repeats` rounds.

    The operations take turns within each round, so a change in machine load during the run touches
    all of them alike; CPU time (not wall time) keeps other processes' share of the cores out of it.
    The garbage collector stays on (its cost is part of decoding into objects), but each timing starts
    from a collected heap, so one operation's garbage is not collected on the next one's clock.
    `new_round` runs before each round, untimed.
    """
    calls = [_calibrate(operation, seconds) for operation in operations]
    samples: list[list[float]] = [[] for _ in operations]
    for _ in range(repeats):
        if new_round is not None:
            new_round()
        for operation, count, timings in zip(operations, calls, samples, strict=True):
            gc.collect()
            start = time.process_time()
            for _ in range(count):
                operation()
            timings.append((time.process_time() - start) / count)
    return [statistics.median(timings) for timings in samples]


def _calibrate(operation: Callable[[], None], seconds: float) -> int:
    """How many calls take about `seconds`."""
    count = 1
    while True:
        start = time.process_time()
        for _ in range(count):
            operation()
        elapsed = time.process_time() - start
        if elapsed >= seconds / 8:
            return max(1, int(count * seconds / elapsed))
        count *= 2


def metadata_floor(case: Case, repeats: int, seconds: float) -> float:
    """CPU seconds to build the decoded Metadata response's objects with no bytes read at all: every
    value taken ready-made from tuples (strings and UUIDs not even created), each object made the
    cheapest way Python has (`object.__new__` and slot stores, as the generated decoders do). A decoder
    that returns these objects cannot take less; the GC stays on, as in the timings above."""
    message = case.ours_cls.decode(case.message.encode(case.version), case.version)
    head = (
        message.throttle_time_ms,
        message.cluster_id,
        message.controller_id,
        message.cluster_authorized_operations,
        message.error_code,
    )
    broker_rows = [(b.node_id, b.host, b.port, b.rack) for b in message.brokers]
    topic_rows = [
        (
            t.error_code,
            t.name,
            t.topic_id,
            t.is_internal,
            t.topic_authorized_operations,
            [
                (
                    p.error_code,
                    p.partition_index,
                    p.leader_id,
                    p.leader_epoch,
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                    tuple(p.offline_replicas),
                )
                for p in t.partitions
            ],
        )
        for t in message.topics
    ]
    new = object.__new__

    def build() -> MetadataResponse:
        m = new(MetadataResponse)
        (
            m.throttle_time_ms,
            m.cluster_id,
            m.controller_id,
            m.cluster_authorized_operations,
            m.error_code,
        ) = head
        m.unknown_tagged_fields = None
        brokers = []
        for node_id, host, port, rack in broker_rows:
            b = new(MetadataResponseBroker)
            b.node_id, b.host, b.port, b.rack = node_id, host, port, rack
            b.unknown_tagged_fields = None
            brokers.append(b)
        m.brokers = brokers
        topics = []
        for error_code, name, topic_id, is_internal, operations, partition_rows in topic_rows:
            t = new(MetadataResponseTopic)
            t.error_code, t.name, t.topic_id, t.is_internal = error_code, name, topic_id, is_internal
            t.topic_authorized_operations = operations
            t.unknown_tagged_fields = None
            partitions = []
            for error, index, leader, epoch, replicas, isr, offline in partition_rows:
                p = new(MetadataResponsePartition)
                p.error_code, p.partition_index, p.leader_id, p.leader_epoch = error, index, leader, epoch
                p.replica_nodes, p.isr_nodes, p.offline_replicas = list(replicas), list(isr), list(offline)
                p.unknown_tagged_fields = None
                partitions.append(p)
            t.partitions = partitions
            topics.append(t)
        m.topics = topics
        return m

    if build() != message:
        raise SystemExit("the floor's objects differ from the decoded message")
    (seconds_per_build,) = timed([build], repeats, seconds)
    return seconds_per_build


# ----- reporting -------------------------------------------------------------------------------------


def floor_line(result: Result, build_s: float) -> str:
    budget = (result.theirs_decode + result.theirs_encode) / GOAL
    least = build_s + result.ours_encode
    return (
        f"{result.case.name}: {GOAL:.0f}x kafka-python leaves {budget * 1e6:,.0f} µs for decode + encode. "
        f"Building the decoded objects alone, with no byte read (values ready-made, `metadata_floor`), "
        f"takes {build_s * 1e6:,.0f} µs, and odradek's encode {result.ours_encode * 1e6:,.0f} µs: "
        f"{least * 1e6:,.0f} µs, {100 * least / budget:.0f}% "
        "of the budget before any parsing."
    )


def markdown_table(results: list[Result]) -> str:
    lines = [
        "| message | bytes | odradek decode+encode ops/s | kafka-python ops/s | ratio | "
        "odradek decode / encode µs | kafka-python decode / encode µs |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.case.name} | {r.size:,} | {r.ours_ops:,.0f} | {r.theirs_ops:,.0f} | {r.ratio:.1f}x | "
            f"{r.ours_decode * 1e6:,.1f} / {r.ours_encode * 1e6:,.1f} | "
            f"{r.theirs_decode * 1e6:,.1f} / {r.theirs_encode * 1e6:,.1f} |"
        )
    return "\n".join(lines)


def machine_facts() -> str:
    cpu = platform.processor() or "unknown"
    try:
        info = dict(
            (key.strip(), value.strip())
            for key, _, value in (
                line.partition(":") for line in Path("/proc/cpuinfo").read_text().splitlines()
            )
        )
        cpu = f"{info['model name']} (family {info['cpu family']}, model {info['model']})"
        if "hypervisor" in info.get("flags", "").split():
            cpu += ", virtual machine"
    except (OSError, KeyError):
        pass
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"`nproc` {os.cpu_count()}, CPU {cpu}, Python {platform.python_version()} "
        f"({sys.implementation.name}), load average {load} at the start"
    )


def section(table: str, command: str, repeats: int, facts: str) -> str:
    today = datetime.date.today().isoformat()
    return "\n".join(
        [
            SECTION_START,
            f"Measured {today} with `{command}`;",
            f"{facts}.",
            f"Median of {repeats} rounds, CPU time of the process; one operation = decode the bytes + encode",
            "the decoded object; both codecs wrote identical bytes for every message before timing.",
            "",
            table,
            SECTION_END,
        ]
    )


def write_docs(text: str) -> None:
    current = DOCS.read_text() if DOCS.exists() else ""
    pattern = re.compile(re.escape(SECTION_START) + ".*?" + re.escape(SECTION_END), re.S)
    if pattern.search(current):
        DOCS.write_text(pattern.sub(lambda _: text, current))
    else:
        DOCS.write_text(current.rstrip() + "\n\n" + text + "\n")


if __name__ == "__main__":
    sys.exit(main())
