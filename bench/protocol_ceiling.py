"""How fast pure Python can decode and encode the protocol benchmark's Metadata response and Produce
request at all.

    .venv/bin/python bench/protocol_ceiling.py

`protocol_bench.py` times odradek's general codec against kafka-python's. This script adds a third
codec written by hand for each of the two messages where the general codec misses the 5x goal: it
knows the message's shape in advance, checks nothing, and reads and writes runs of fields with as few
precompiled `struct` calls as that shape allows (Metadata: 3 brokers, 100 topics of 10 partitions,
3 replicas, 3 in sync, none offline, no tagged fields, a topic's ten partitions in one call; Produce:
no transactional id, one topic named "bench", one partition, a records length of two varint bytes,
all of it before the records in one call each way). It is no codec (any other message breaks it); it
shows where the 5x goal lies for code that returns the same objects. All three run in the same
process, on the same bytes, timed the same way (`protocol_bench.measure`).
"""

from __future__ import annotations

import gc
import struct
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import protocol_bench as bench
from odradek.protocol.messages.metadata import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

new = object.__new__
set_slot = object.__setattr__
SAFE_UNKNOWN = uuid.SafeUUID.unknown
INT32 = struct.Struct(">i")
INT16 = struct.Struct(">h")
PARTITION = "hiiiB3iB3iBB"  # error, index, leader, epoch, 3 replicas, 3 in sync, none offline, no tags
TEN_PARTITIONS = struct.Struct(">" + PARTITION * 10)
ONE_PARTITION = struct.Struct(">" + PARTITION)
TOPIC_TAIL = struct.Struct(">iB")  # authorized operations, no tags


def decode_metadata(buf: bytes) -> MetadataResponse:
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


def encode_metadata(message: MetadataResponse, out: bytearray) -> None:
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


# Everything before the records in one struct: null transactional id, acks, timeout, 1 topic, its
# name ("bench", 5 bytes), 1 partition, its index, the records length (two varint bytes).
PRODUCE_HEAD = struct.Struct(">BhiBB5sBiBB")
NO_TOPIC_ID = TopicProduceData().topic_id


def decode_produce(buf: bytes) -> ProduceRequest:
    message = new(ProduceRequest)
    topic = new(TopicProduceData)
    partition = new(PartitionProduceData)
    _, message.acks, message.timeout_ms, _, _, name, _, partition.index, low, high = PRODUCE_HEAD.unpack_from(
        buf
    )
    message.transactional_id = None
    topic.name = name.decode()
    end = PRODUCE_HEAD.size + ((low & 127) | high << 7) - 1
    partition.records = buf[PRODUCE_HEAD.size : end]
    partition.unknown_tagged_fields = None
    topic.partition_data = [partition]
    topic.topic_id = NO_TOPIC_ID
    topic.unknown_tagged_fields = None
    message.topic_data = [topic]
    message.unknown_tagged_fields = None
    return message


def encode_produce(message: ProduceRequest, out: bytearray) -> None:
    topic = message.topic_data[0]
    partition = topic.partition_data[0]
    records = partition.records
    size = len(records) + 1
    name = topic.name.encode()
    out += PRODUCE_HEAD.pack(
        0, message.acks, message.timeout_ms, 2, 6, name, 2, partition.index, size & 127 | 128, size >> 7
    )
    out += records
    out += b"\0\0\0"  # no tags: partition, topic, request


REPEATS = 9
CEILINGS = {
    MetadataResponse: bench.ThirdCodec(decode_metadata, encode_metadata),
    ProduceRequest: bench.ThirdCodec(decode_produce, encode_produce),
}


def main() -> int:
    gc.collect()
    gc.freeze()  # as protocol_bench.main() does
    for case in bench.cases():
        hand_written = CEILINGS.get(case.ours_cls)
        if hand_written is not None:
            check(case, hand_written)
            print_result(bench.measure(case, REPEATS, 0.2, hand_written))
    return 0


def check(case: bench.Case, hand_written: bench.ThirdCodec) -> None:
    data = case.message.encode(case.version)
    if hand_written.decode(data) != case.message:
        raise SystemExit(f"{case.name}: the hand-written decoder reads the message differently")
    written = bytearray()
    hand_written.encode(case.message, written)
    if bytes(written) != data:
        raise SystemExit(f"{case.name}: the hand-written encoder writes the message differently")


def print_result(result: bench.Result) -> None:
    assert result.third_decode is not None and result.third_encode is not None
    kafka_python = result.theirs_decode + result.theirs_encode
    digits = 2 if kafka_python < 100e-6 else 1
    print(f"{result.case.name}, µs per decode / encode (median of {REPEATS} rounds):")
    for label, decode, encode in (
        ("hand-written for this message", result.third_decode, result.third_encode),
        ("odradek", result.ours_decode, result.ours_encode),
        ("kafka-python", result.theirs_decode, result.theirs_encode),
    ):
        times = f"{decode * 1e6:8.{digits}f} / {encode * 1e6:8.{digits}f}"
        print(f"  {label:30} {times}   {kafka_python / (decode + encode):4.1f}x kafka-python")


if __name__ == "__main__":
    sys.exit(main())
