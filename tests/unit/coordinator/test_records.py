"""`__consumer_offsets` records in Kafka's byte layout, and Kafka's group-to-partition hash."""

from __future__ import annotations

import struct

import pytest

from odradek.coordinator.partitioning import java_string_hash, partition_for
from odradek.coordinator.records import (
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    decode_record,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
)


def string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_an_offset_commit_is_written_as_kafka_writes_it() -> None:
    record = offset_commit_record(
        "g", "t", 3, offset=42, leader_epoch=7, metadata="m", commit_timestamp=1000, expire_timestamp=None
    )
    key, value = record.encode()
    assert key == struct.pack(">h", 1) + string("g") + string("t") + struct.pack(">i", 3)
    assert value == struct.pack(">hqi", 3, 42, 7) + string("m") + struct.pack(">q", 1000)
    assert decode_record(key, value) == record


def test_an_offset_commit_with_its_own_retention_is_value_version_one() -> None:
    record = offset_commit_record("g", "t", 0, 1, -1, "", 1000, expire_timestamp=5000)
    _, value = record.encode()
    assert value == struct.pack(">hq", 1, 1) + string("") + struct.pack(">qq", 1000, 5000)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_every_offset_commit_value_version_is_read(version: int) -> None:
    value = OffsetCommitValue(
        offset=9,
        leader_epoch=2 if version >= 3 else -1,
        metadata="x",
        commit_timestamp=5,
        expire_timestamp=8 if version == 1 else -1,
    )
    key = struct.pack(">h", 0) + string("g") + string("t") + struct.pack(">i", 0)  # type 0: Kafka < 0.10
    decoded = decode_record(key, struct.pack(">h", version) + value.encode(version))
    assert decoded.value == value and decoded.value_version == version


def test_group_metadata_round_trips_and_a_tombstone_has_no_value() -> None:
    member = MemberMetadata(
        member_id="m-1",
        group_instance_id="i",
        client_id="c",
        client_host="/127.0.0.1",
        rebalance_timeout=300_000,
        session_timeout=10_000,
        subscription=b"s",
        assignment=b"a",
    )
    record = group_metadata_record("g", "consumer", 5, "range", "m-1", 1234, [member])
    key, value = record.encode()
    assert key == struct.pack(">h", 2) + string("g")
    assert value is not None and value[:2] == struct.pack(">h", 3)
    decoded = decode_record(key, value)
    assert isinstance(decoded.value, GroupMetadataValue) and decoded.value.members == [member]
    assert group_metadata_tombstone("g").encode() == (key, None)
    assert decode_record(key, None).value is None


def test_group_ids_hash_to_partitions_as_java_string_hash_code() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -2147483648  # Integer.MIN_VALUE: Kafka's abs() gives 0
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("console-consumer-12345") == _java_reference("console-consumer-12345")
    assert partition_for("my-group", 50) == abs(_java_reference("my-group")) % 50
    assert java_string_hash("é🙂") == _java_reference("é🙂")


def _java_reference(text: str) -> int:
    h = 0
    for unit in [
        int.from_bytes(text.encode("utf-16-be")[i : i + 2], "big")
        for i in range(0, len(text.encode("utf-16-be")), 2)
    ]:
        h = (h * 31 + unit) % 2**32
    return h - 2**32 if h >= 2**31 else h
