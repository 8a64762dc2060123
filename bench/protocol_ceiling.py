"""How fast pure Python can decode and encode the protocol benchmark's Metadata response at all.

    .venv/bin/python bench/protocol_ceiling.py

`protocol_bench.py` times odradek's general codec against kafka-python's. This script adds a third
codec written by hand for that one message: it knows the shape in advance (3 brokers, 100 topics of
10 partitions, 3 replicas, 3 in sync, none offline, no tagged fields), checks nothing, reads each
topic's ten partitions with one precompiled `struct` call and writes each partition with one. It is
no codec (any other message breaks it); it shows where the 5x goal lies for code that returns the same
objects. All three run in the same process, on the same bytes, timed the same way.
"""

from __future__ import annotations

import gc
import struct
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import protocol_bench as bench
from odradek.protocol.codec import encode_into_for
from odradek.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

new = object.__new__
set_slot = object.__setattr__
SAFE_UNKNOWN = uuid.SafeUUID.unknown
INT32 = struct.Struct(">i")
INT16 = struct.Struct(">h")
PARTITION = "hiiiB3iB3iBB"  # error, index, leader, epoch, 3 replicas, 3 in sync, none offline, no tags
TEN_PARTITIONS = struct.Struct(">" + PARTITION * 10)
ONE_PARTITION = struct.Struct(">" + PARTITION)
TOPIC_TAIL = struct.Struct(">iB")  # authorized operations, no tags


def decode(buf: bytes) -> MetadataResponse:
    message = new(MetadataResponse)
    (message.throttle_time_ms,) = INT32.unpack_from(buf, 0)
    pos = 5
    brokers = []
    for _ in range(buf[4] - 1):
        broker = new(MetadataResponseBroker)
        (broker.node_id,) = INT32.unpack_from(buf, pos)
        length = buf[pos + 4] - 1
        pos += 5
        broker.host = buf[pos : pos + length].decode()
        pos += length
        (broker.port,) = INT32.unpack_from(buf, pos)
        broker.rack = None
        broker.unknown_tagged_fields = None
        pos += 6  # port, null rack, no tags
        brokers.append(broker)
    message.brokers = brokers
    length = buf[pos] - 1
    message.cluster_id = buf[pos + 1 : pos + 1 + length].decode()
    pos += 1 + length
    (message.controller_id,) = INT32.unpack_from(buf, pos)
    count = buf[pos + 4] - 1
    pos += 5
    topics = []
    for _ in range(count):
        topic = new(MetadataResponseTopic)
        (topic.error_code,) = INT16.unpack_from(buf, pos)
        length = buf[pos + 2] - 1
        pos += 3
        topic.name = buf[pos : pos + length].decode()
        pos += length
        topic_id = new(uuid.UUID)
        set_slot(topic_id, "int", int.from_bytes(buf[pos : pos + 16], "big"))
        set_slot(topic_id, "is_safe", SAFE_UNKNOWN)
        topic.topic_id = topic_id
        topic.is_internal = buf[pos + 16] != 0
        pos += 18  # uuid, is_internal, partition count
        values = TEN_PARTITIONS.unpack_from(buf, pos)
        pos += TEN_PARTITIONS.size
        partitions = []
        fields = iter(values)
        rows = zip(*[fields] * 14, strict=True)  # 14 values a partition
        for error, index, leader, epoch, _, r0, r1, r2, _, i0, i1, i2, _, _ in rows:
            partition = new(MetadataResponsePartition)
            partition.error_code = error
            partition.partition_index = index
            partition.leader_id = leader
            partition.leader_epoch = epoch
            partition.replica_nodes = [r0, r1, r2]
            partition.isr_nodes = [i0, i1, i2]
            partition.offline_replicas = []
            partition.unknown_tagged_fields = None
            partitions.append(partition)
        topic.partitions = partitions
        topic.topic_authorized_operations, _ = TOPIC_TAIL.unpack_from(buf, pos)
        pos += 5
        topic.unknown_tagged_fields = None
        topics.append(topic)
    message.topics = topics
    message.cluster_authorized_operations = -(2**31)
    message.error_code = 0
    message.unknown_tagged_fields = None
    return message


def encode(message: MetadataResponse, out: bytearray) -> None:
    # Every string is written out in place, not by a helper: this is a ceiling, and a call per string
    # (104 of them) would be time the fastest code does not spend.
    pack_partition = ONE_PARTITION.pack
    out += INT32.pack(message.throttle_time_ms)
    out.append(len(message.brokers) + 1)
    for broker in message.brokers:
        out += INT32.pack(broker.node_id)
        host = broker.host.encode()
        out.append(len(host) + 1)
        out += host
        out += INT32.pack(broker.port)
        out += b"\0\0"  # null rack, no tags
    cluster_id = message.cluster_id.encode()
    out.append(len(cluster_id) + 1)
    out += cluster_id
    out += INT32.pack(message.controller_id)
    out.append(len(message.topics) + 1)
    for topic in message.topics:
        out += INT16.pack(topic.error_code)
        name = topic.name.encode()
        out.append(len(name) + 1)
        out += name
        out += topic.topic_id.int.to_bytes(16, "big")
        out.append(1 if topic.is_internal else 0)
        out.append(len(topic.partitions) + 1)
        for p in topic.partitions:
            r = p.replica_nodes
            i = p.isr_nodes
            out += pack_partition(
                p.error_code, p.partition_index, p.leader_id, p.leader_epoch, 4, r[0], r[1], r[2], 4,
                i[0], i[1], i[2], 1, 0,
            )  # fmt: skip
        out += TOPIC_TAIL.pack(topic.topic_authorized_operations, 0)
    out.append(0)


def main() -> int:
    case = next(c for c in bench.cases() if c.ours_cls is MetadataResponse)
    version = case.version
    data = case.message.encode(version)
    if decode(data) != case.message:
        raise SystemExit("the hand-written decoder reads the message differently")
    written = bytearray()
    encode(case.message, written)
    if bytes(written) != data:
        raise SystemExit("the hand-written encoder writes the message differently")
    ours = MetadataResponse.decode(data, version)
    theirs = bench.their_decoding(case, data)
    encode_into = encode_into_for(MetadataResponse, version)
    gc.collect()
    gc.freeze()
    operations: list[Any] = [
        lambda: decode(data),
        lambda: encode(ours, bytearray()),
        lambda: MetadataResponse.decode(data, version),
        lambda: encode_into(ours, bytearray()),
        lambda: case.theirs_cls.decode(data, version=version),
        lambda: theirs.encode(version=version),
    ]
    timings = [seconds * 1e6 for seconds in bench.timed(operations, 9, 0.2)]
    kafka_python = timings[4] + timings[5]
    print(f"{case.name}, µs per decode / encode (median of 9 rounds):")
    for label, (dec, enc) in (
        ("hand-written for this message", timings[0:2]),
        ("odradek", timings[2:4]),
        ("kafka-python", timings[4:6]),
    ):
        print(f"  {label:30} {dec:8.1f} / {enc:8.1f}   {kafka_python / (dec + enc):4.1f}x kafka-python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
