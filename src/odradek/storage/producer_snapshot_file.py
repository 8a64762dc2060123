"""The bytes of a producer snapshot (``<offset>.snapshot``): Kafka 3.9's layout, so a log directory
moves between odradek and Kafka brokers with its producer state (issue #27).

Version 1, big-endian, as Kafka's ProducerStateManager writes it::

    int16 version (1) | uint32 CRC-32C of the rest | int32 count | count x entry
    entry: int64 producer id | int16 epoch | int32 last sequence | int64 last offset |
           int32 offset delta | int64 timestamp | int32 coordinator epoch | int64 open txn first offset

One batch per producer is kept (the last); a producer without one has last sequence and offset -1.
Files odradek wrote before it used Kafka's layout (a text header, then JSON) are still read.
"""

from __future__ import annotations

import json
import struct
from collections import deque

import crc32c

from odradek.storage.errors import CorruptSnapshotError
from odradek.storage.producer_state import BatchMetadata, ProducerStateEntry

VERSION = 1
_HEADER = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_NONE = -1
_LEGACY_MAGIC = b"odradek-producer-snapshot "


def encode_snapshot(entries: list[ProducerStateEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for entry in entries:
        last = entry.batches[-1] if entry.batches else None
        body += _ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            last.last_seq if last else _NONE,
            last.last_offset if last else _NONE,
            last.offset_delta if last else 0,
            entry.last_timestamp,
            entry.coordinator_epoch,
            _NONE if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
        )
    return _HEADER.pack(VERSION, crc32c.crc32c(body)) + body


def decode_snapshot(raw: bytes) -> list[ProducerStateEntry]:
    """The entries of a snapshot file's bytes; CorruptSnapshotError if any check fails."""
    if raw.startswith(_LEGACY_MAGIC):
        return _decode_legacy(raw)
    if len(raw) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshotError(f"{len(raw)} bytes is too short for a producer snapshot")
    version, crc = _HEADER.unpack_from(raw)
    if version != VERSION:
        raise CorruptSnapshotError(f"producer snapshot version {version} is not {VERSION}")
    body = memoryview(raw)[_HEADER.size :]
    if crc != crc32c.crc32c(body):
        raise CorruptSnapshotError("producer snapshot fails its CRC check")
    (count,) = _COUNT.unpack_from(body)
    if count < 0 or len(body) != _COUNT.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"producer snapshot of {len(raw)} bytes cannot hold {count} entries")
    entries = []
    for (
        pid,
        epoch,
        last_seq,
        last_offset,
        delta,
        timestamp,
        coordinator_epoch,
        txn_first,
    ) in _ENTRY.iter_unpack(body[_COUNT.size :]):
        # as Kafka: the entry's timestamp is also its last batch's
        batches = deque([BatchMetadata(last_seq, last_offset, delta, timestamp)] if last_offset >= 0 else [])
        first = None if txn_first < 0 else txn_first
        entries.append(ProducerStateEntry(pid, epoch, coordinator_epoch, timestamp, first, batches))
    return entries


def _decode_legacy(raw: bytes) -> list[ProducerStateEntry]:
    """odradek's own earlier format: ``odradek-producer-snapshot 1 <crc32c hex>\\n{json}``."""
    try:
        header, _, body = raw.partition(b"\n")
        _, version, crc = header.decode("ascii").split(" ")
        if int(version) != 1 or int(crc, 16) != crc32c.crc32c(body):
            raise CorruptSnapshotError("producer snapshot (odradek's earlier format) fails its CRC check")
        return [
            ProducerStateEntry(
                int(p["producer_id"]),
                int(p["producer_epoch"]),
                int(p["coordinator_epoch"]),
                int(p["last_timestamp"]),
                None if p["current_txn_first_offset"] is None else int(p["current_txn_first_offset"]),
                deque(BatchMetadata(*(int(v) for v in b)) for b in p["batches"]),
            )
            for p in json.loads(body)["producers"]
        ]
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptSnapshotError(f"producer snapshot (odradek's earlier format) cannot be read: {e}") from e
