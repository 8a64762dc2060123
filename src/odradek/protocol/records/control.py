"""Control records: the transaction markers (COMMIT/ABORT) the coordinator writes to partitions.

A control batch has the control attribute bit set (and, for markers, the transactional bit) and holds
one record whose key is version int16 + type int16 and, for end-transaction markers, whose value is
version int16 + coordinator_epoch int32.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from odradek.protocol.records.attributes import NO_PARTITION_LEADER_EPOCH, Compression
from odradek.protocol.records.batch import RecordBatch, RecordBatchBuilder
from odradek.protocol.records.errors import CorruptRecordError, RecordsError
from odradek.protocol.records.record import Record

_CONTROL_KEY = struct.Struct(">hh")
_END_TRANSACTION_MARKER_VALUE = struct.Struct(">hi")
CONTROL_KEY_VERSION = 0
END_TRANSACTION_MARKER_VERSION = 0


class ControlRecordType(IntEnum):
    """The type in a control record's key (ABORT and COMMIT are the transaction markers)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """A COMMIT or ABORT marker, written by the transaction coordinator at ``coordinator_epoch``."""

    control_type: ControlRecordType
    coordinator_epoch: int
    version: int = END_TRANSACTION_MARKER_VERSION


def encode_control_key(control_type: ControlRecordType, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _CONTROL_KEY.pack(version, control_type)


def decode_control_key(key: bytes | None) -> tuple[int, int]:
    """(version, type) of a control record key; the type is left an int so unknown types can be skipped."""
    if key is None or len(key) < _CONTROL_KEY.size:
        raise CorruptRecordError("control record key is shorter than 4 bytes")
    version, control_type = _CONTROL_KEY.unpack_from(key)
    return int(version), int(control_type)


def encode_end_transaction_marker_value(
    coordinator_epoch: int, version: int = END_TRANSACTION_MARKER_VERSION
) -> bytes:
    return _END_TRANSACTION_MARKER_VALUE.pack(version, coordinator_epoch)


def decode_end_transaction_marker(record: Record) -> EndTransactionMarker:
    """The marker a control record carries; raises CorruptRecordError if it is not a COMMIT/ABORT."""
    _, control_type = decode_control_key(record.key)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise CorruptRecordError(f"control record type {control_type} is not a transaction marker")
    value = record.value
    # Newer marker versions may append fields; Kafka reads the ones it knows and ignores the rest.
    if value is None or len(value) < _END_TRANSACTION_MARKER_VALUE.size:
        raise CorruptRecordError("end transaction marker value is shorter than 6 bytes")
    version, coordinator_epoch = _END_TRANSACTION_MARKER_VALUE.unpack_from(value)
    return EndTransactionMarker(ControlRecordType(control_type), coordinator_epoch, version)


def build_end_transaction_marker_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A control batch holding one COMMIT or ABORT marker, as the transaction coordinator writes it."""
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise RecordsError(f"{control_type!r} is not a transaction marker")
    builder = RecordBatchBuilder(
        base_offset,
        compression=Compression.NONE,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    builder.append(
        timestamp, encode_control_key(control_type), encode_end_transaction_marker_value(coordinator_epoch)
    )
    return builder.build()


def read_end_transaction_marker(batch: RecordBatch) -> EndTransactionMarker:
    """The marker in a decoded control batch."""
    if not batch.is_control or len(batch.records) != 1:
        raise CorruptRecordError("a transaction marker batch is a control batch with exactly one record")
    return decode_end_transaction_marker(batch.records[0])
