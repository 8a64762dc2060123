"""Which partition of a coordinator's internal topic holds a key (a group or transactional id).

Kafka hashes the key with Java's String.hashCode and takes it modulo the topic's partition count
(`Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`); a key is refused before it is hashed
when no coordinator record could hold it.
"""

from __future__ import annotations

import array
import sys
from collections.abc import Iterable
from typing import Final

from odradek.protocol.error_codes import ErrorCode, KafkaError

#: The longest key (group or transactional id) a coordinator record can hold: Kafka's record keys
#: write it as a string with a 16-bit length. A longer one is refused before it is hashed, since the
#: hash below runs at Python's speed on the event loop (a megabyte took half a second).
MAX_KEY_BYTES: Final = 32767
_UTF16_NATIVE: Final = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, 32-bit overflow), which Kafka hashes group ids with."""
    units: Iterable[int]
    if text.isascii():
        units = text.encode("ascii")
    else:
        units = array.array("H", text.encode(_UTF16_NATIVE))
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions` (abs(MIN_VALUE) is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def check_key_length(key: str, what: str, error: ErrorCode) -> None:
    """Raise `error` for a key longer than MAX_KEY_BYTES in UTF-8."""
    if len(key) > MAX_KEY_BYTES or (
        len(key) * 3 > MAX_KEY_BYTES and len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES
    ):
        raise KafkaError(
            error, f"The {what} is longer than {MAX_KEY_BYTES} bytes, the most a coordinator record holds."
        )
