"""Walking a buffer of log entries of any format (MessageSet v0/v1 messages, RecordBatch v2 batches).

All three formats frame each entry as offset int64 + length int32 + length bytes, with the magic byte
at entry offset 16. That is enough to find where whole entries end without decoding any of them, which
is what a Fetch response needs: brokers may cut the last entry short, and that is reported, not an error.
"""

from __future__ import annotations

import struct

from odradek.protocol.records.attributes import LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V0, MAGIC_V1, MAGIC_V2
from odradek.protocol.records.errors import CorruptRecordError

Buffer = bytes | bytearray | memoryview

# Smallest legal length field per magic: crc+magic+attributes(+timestamp)+key len+value len for
# messages, the fixed header after the length field for v2 batches.
MIN_ENTRY_LENGTH = {MAGIC_V0: 14, MAGIC_V1: 22, MAGIC_V2: 49}

_OFFSET_AND_LENGTH = struct.Struct(">qi")


def split_complete_batches(buf: Buffer, pos: int = 0, end: int | None = None) -> tuple[int, bool]:
    """Bytes of the whole entries at the start of ``buf[pos:end]``, and whether a partial entry follows.

    Raises CorruptRecordError for an unknown magic or an impossible length in any entry whose first
    17 bytes are present; a shorter tail is simply reported as partial.
    """
    limit = len(buf) if end is None else min(end, len(buf))
    start = pos
    while limit - pos >= MAGIC_OFFSET + 1:
        length = _OFFSET_AND_LENGTH.unpack_from(buf, pos)[1]
        magic = buf[pos + MAGIC_OFFSET]
        minimum = MIN_ENTRY_LENGTH.get(magic)
        if minimum is None:
            raise CorruptRecordError(f"entry at position {pos} has unknown magic {magic}")
        if length < minimum:
            raise CorruptRecordError(
                f"entry at position {pos} (magic {magic}) has impossible length {length}"
            )
        entry_end = pos + LOG_OVERHEAD + length
        if entry_end > limit:
            return pos - start, True
        pos = entry_end
    return pos - start, pos < limit
