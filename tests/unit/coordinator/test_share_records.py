"""The share group records of `__consumer_offsets` in Kafka 4.4's bytes (types 9-15), and their decoding."""

from __future__ import annotations

import uuid

from odradek.coordinator import share_records as sr
from odradek.coordinator.records import decode_record

TOPIC = uuid.UUID("00000000-0000-0000-0000-0000000000ab")


def test_share_group_epoch_record_has_kafkas_key_and_value_bytes() -> None:
    key, value = sr.group_epoch_record("sg", 5, 7).encode()
    assert key == bytes.fromhex("000b0002") + b"sg"  # type 11, then the group id (int16 length)
    # value version 0 (flexible): epoch int32, metadata hash int64, no tagged fields
    assert value == bytes.fromhex("000000000005000000000000000700")


def test_share_group_current_assignment_has_kafkas_value_bytes() -> None:
    _, value = sr.current_assignment_record("sg", "m", 3, 2, {TOPIC: frozenset({1, 0})}).encode()
    header = "0000000000030000000200"  # version, member epoch, previous epoch, state STABLE
    topic = "02" + TOPIC.hex + "03000000000000000100"  # one topic: id, partitions [0, 1]
    assert value == bytes.fromhex(header + topic + "00")  # then the value's tagged fields


def test_share_records_decode_back_including_the_partition_metadata_kafka_4_0_wrote() -> None:
    record = sr.state_partition_metadata_record("sg", {TOPIC: ("t", frozenset({0, 2}))})
    decoded = decode_record(*record.encode())
    assert decoded == record
    assert decoded.record_type == sr.SHARE_GROUP_STATE_PARTITION_METADATA
    # type 9: Kafka 4.0's subscription metadata, read past as a tombstone only
    tombstone = decode_record(bytes.fromhex("00090002") + b"sg", None)
    assert (tombstone.record_type, tombstone.value) == (9, None)
