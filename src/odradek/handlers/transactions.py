"""Transactions are refused until odradek has a transaction coordinator, in one way for every API.

Kafka's answer for a transactional id its authorizer grants to no one is TRANSACTIONAL_ID_AUTHORIZATION_FAILED
at FindCoordinator (key type 1), at InitProducerId and at Produce with transactional batches; this broker
answers exactly that, with a message saying why where the response has a message field. It is the one
refusal every client treats as fatal at once: librdkafka retries any other FindCoordinator error (so
init_transactions() would wait out its whole timeout), and COORDINATOR_NOT_AVAILABLE, answered before,
is retried by all of them. A transactional batch is refused rather than appended because nothing would
ever commit or abort it: it would pin the last stable offset and stall `read_committed` consumers.
"""

from __future__ import annotations

import struct
from typing import Final

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records.attributes import LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2, TRANSACTIONAL_FLAG_MASK
from odradek.protocol.records.header import ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET

TRANSACTIONS_REFUSED: Final = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
REFUSAL_MESSAGE: Final = (
    "transactions are not supported by this broker (odradek has no transaction coordinator)"
)

_BATCH_LENGTH = struct.Struct(">i")
_ATTRIBUTES = struct.Struct(">h")


def has_transactional_batch(records: bytes | bytearray | memoryview | None) -> bool:
    """True when a v2 batch in ``records`` has its transactional bit set.

    Reads two header fields per batch (no CRC, no records); stops at the first legacy message set or
    cut-short batch, which validation reports on its own (a legacy message cannot be transactional)."""
    if not records:
        return False
    pos, size = 0, len(records)
    while size - pos > ATTRIBUTES_OFFSET + 1 and records[pos + MAGIC_OFFSET] == MAGIC_V2:
        (attributes,) = _ATTRIBUTES.unpack_from(records, pos + ATTRIBUTES_OFFSET)
        if attributes & TRANSACTIONAL_FLAG_MASK:
            return True
        (length,) = _BATCH_LENGTH.unpack_from(records, pos + BATCH_LENGTH_OFFSET)
        if length <= 0:
            return False
        pos += LOG_OVERHEAD + length
    return False
