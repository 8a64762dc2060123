"""v2 batches built by hand, as a buggy or hostile producer could send them: a records section that
need not match the header (fewer or more records than it claims, offset deltas out of order, a max
timestamp below its records'), in any codec, with a valid CRC over whatever it holds."""

from __future__ import annotations

from odradek.protocol.records import Compression, compress
from odradek.protocol.records.header import HEADER_SIZE, HEADER_STRUCT, write_crc
from odradek.protocol.records.varint import write_varint, write_varlong

START_MS = 1_700_000_000_000


def hand_built_batch(
    records_section: bytes,
    compression: Compression = Compression.NONE,
    *,
    count: int = 1,
    base_timestamp: int = START_MS,
    max_timestamp: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytearray:
    """A batch whose header claims ``count`` records (offsets 0..count-1) and whose records section is
    ``records_section`` compressed with ``compression``; the CRC is valid."""
    body = records_section if compression is Compression.NONE else compress(compression, records_section)
    out = bytearray(HEADER_SIZE) + body
    HEADER_STRUCT.pack_into(
        out,
        0,
        0,  # base offset
        HEADER_SIZE - 12 + len(body),
        -1,  # partition leader epoch
        2,
        0,  # CRC, written last
        int(compression),
        count - 1,
        base_timestamp,
        base_timestamp if max_timestamp is None else max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    write_crc(out, 0, len(out))
    return out


def hand_built_record(
    offset_delta: int, value: bytes | None, key: bytes | None = b"k", timestamp_delta: int = 0
) -> bytes:
    """One v2 record (its length prefix included), without headers."""
    body = bytearray(b"\x00")  # attributes
    write_varlong(body, timestamp_delta)
    write_varint(body, offset_delta)
    for field in (key, value):
        if field is None:
            write_varint(body, -1)
        else:
            write_varint(body, len(field))
            body += field
    write_varint(body, 0)  # no headers
    record = bytearray()
    write_varint(record, len(body))
    return bytes(record + body)
