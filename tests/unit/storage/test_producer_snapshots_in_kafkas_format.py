"""Producer snapshots are Kafka 3.9's `<offset>.snapshot` files (issue #27: each other's log
directories). odradek wrote a JSON format of its own under Kafka's file name, so it deleted every
snapshot a Kafka broker had left as "unreadable", and Kafka would delete odradek's the same way.

Kafka's layout (ProducerStateManager, version 1): int16 version, uint32 CRC-32C of everything after
it, then an int32 count of entries, each: int64 producer id, int16 epoch, int32 last sequence, int64
last offset, int32 offset delta, int64 timestamp, int32 coordinator epoch, int64 current transaction's
first offset (-1 when none). The bytes here are built from that description, not from our writer.
"""

from __future__ import annotations

import struct
from collections import deque
from pathlib import Path

import crc32c
import pytest

from odradek.storage.errors import CorruptSnapshotError
from odradek.storage.producer_recovery import read_snapshot, snapshot_path, write_snapshot
from odradek.storage.producer_state import BatchMetadata, ProducerStateEntry, ProducerStateManager

_ENTRY = struct.Struct(">qhiqiqiq")


def kafka_snapshot(entries: list[tuple[int, int, int, int, int, int, int, int]]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def test_a_snapshot_kafka_wrote_is_read_not_deleted(tmp_path: Path) -> None:
    path = snapshot_path(tmp_path, 250)
    path.write_bytes(
        kafka_snapshot(
            [
                (7, 0, 99, 240, 9, 1_700_000_000_000, -1, -1),  # idempotent: last batch 230-240, seq 90-99
                (8, 3, 4, 245, 0, 1_700_000_000_500, 2, 243),  # transactional, open since 243
            ]
        )
    )
    offset, entries = read_snapshot(path)
    assert offset == 250
    assert entries == [
        ProducerStateEntry(
            7, 0, -1, 1_700_000_000_000, None, deque([BatchMetadata(99, 240, 9, 1_700_000_000_000)])
        ),
        ProducerStateEntry(
            8, 3, 2, 1_700_000_000_500, 243, deque([BatchMetadata(4, 245, 0, 1_700_000_000_500)])
        ),
    ]


def test_a_snapshot_kafka_wrote_of_a_producer_without_batches_keeps_its_epoch(tmp_path: Path) -> None:
    path = snapshot_path(tmp_path, 12)
    path.write_bytes(kafka_snapshot([(9, 5, -1, -1, 0, 1_700_000_000_000, 4, -1)]))  # fenced by a marker
    _, entries = read_snapshot(path)
    assert entries == [ProducerStateEntry(9, 5, 4, 1_700_000_000_000, None, deque())]


def test_the_snapshot_odradek_writes_is_kafkas_layout(tmp_path: Path) -> None:
    state = ProducerStateManager()
    state.producers[7] = ProducerStateEntry(
        7, 0, -1, 1_700_000_000_000, None, deque([BatchMetadata(89, 230, 9, 1), BatchMetadata(99, 240, 9, 2)])
    )
    state.producers[8] = ProducerStateEntry(8, 3, 2, 5, 243, deque())
    state.map_end_offset = 250
    path = write_snapshot(tmp_path, state)
    assert path.name == "00000000000000000250.snapshot"
    # Kafka keeps one batch per producer in the file: the last one
    assert path.read_bytes() == kafka_snapshot(
        [(7, 0, 99, 240, 9, 1_700_000_000_000, -1, -1), (8, 3, -1, -1, 0, 5, 2, 243)]
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-1],  # cut short
        lambda raw: raw[:6] + bytes([raw[6] ^ 1]) + raw[7:],  # a bit flipped: CRC
        lambda raw: b"\x00\x02" + raw[2:],  # a version Kafka 3.9 does not write
        lambda raw: raw + b"\x00",  # trailing bytes
    ],
)
def test_a_damaged_kafka_snapshot_is_refused(tmp_path: Path, damage: object) -> None:
    path = snapshot_path(tmp_path, 3)
    path.write_bytes(damage(kafka_snapshot([(7, 0, 1, 2, 0, 3, -1, -1)])))  # type: ignore[operator]
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(path)


def test_a_snapshot_in_odradeks_earlier_format_is_still_read(tmp_path: Path) -> None:
    body = (
        b'{"offset":40,"producers":[{"producer_id":7,"producer_epoch":1,"coordinator_epoch":-1,'
        b'"last_timestamp":5,"current_txn_first_offset":null,"batches":[[4,30,4,5],[9,39,4,5]]}]}'
    )
    path = snapshot_path(tmp_path, 40)
    path.write_bytes(f"odradek-producer-snapshot 1 {crc32c.crc32c(body):08x}\n".encode() + body)
    assert read_snapshot(path) == (
        40,
        [
            ProducerStateEntry(
                7, 1, -1, 5, None, deque([BatchMetadata(4, 30, 4, 5), BatchMetadata(9, 39, 4, 5)])
            )
        ],
    )
