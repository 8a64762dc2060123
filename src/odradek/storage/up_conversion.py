"""An old producer's message set (Produce v0-2: MessageSet v0 or v1) as the one v2 batch the log
stores, made in the topic's codec and level directly (or in the producer's own for a ``producer``
topic), as Kafka's LogValidator converts it: never converted in one codec and then rewritten.

Kafka's rules for such a message set are kept: a compressed wrapper must be its only message
("Compressed outer record has more than one batch"), every message must have the first one's magic
(INVALID_RECORD), and none may be larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE). Every message
is read and decoded, so the conversion runs in a record worker, with ``prepared_appends``' bounds.
"""

from __future__ import annotations

from odradek.protocol.records import (
    Compression,
    RecordsError,
    UnsupportedCompressionError,
    decode_message_set,
    scan_message_set,
    up_convert_message_set,
)
from odradek.storage.config import LogConfig
from odradek.storage.errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError, StorageError
from odradek.storage.log_append import MAX_RECORDS_PER_BATCH, validate_batches
from odradek.storage.prepared_appends import (
    PreparedAppend,
    RecordBudget,
    decompression_bound,
    prepare_append,
    progress_of,
    storage_error,
)
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.record_workers import Checkpoint

Buffer = bytes | bytearray | memoryview


def prepare_message_set(
    message_set: Buffer,
    config: LogConfig,
    now: int,
    *,
    budget: RecordBudget | None = None,
    checkpoint: Checkpoint | None = None,
) -> PreparedAppend:
    """``message_set`` converted up and its record work done (see ``prepare_append``): its ``source``
    is the v2 batch to append, unless its ``error`` says why the message set is refused."""
    try:
        converted = up_convert(message_set, config, budget, checkpoint)
        headers = validate_batches(converted, config, AppendOrigin.CLIENT)
    except (StorageError, UnsupportedCompressionError) as error:
        return PreparedAppend(config, message_set, error=error)
    except RecordsError as error:
        return PreparedAppend(config, message_set, error=storage_error(error, config))
    return prepare_append(converted, headers, config, now, budget=budget, checkpoint=checkpoint)


def up_convert(
    message_set: Buffer, config: LogConfig, budget: RecordBudget | None, checkpoint: Checkpoint | None
) -> bytearray:
    """The one v2 batch holding every record of ``message_set``, in the codec the log stores."""
    entries = scan_message_set(message_set, MAX_RECORDS_PER_BATCH)
    if not entries:
        raise CorruptRecordError("produce request without a whole message")
    if len(entries) > 1 and any(codec is not Compression.NONE for _, _, codec in entries):
        raise InvalidRecordError("Compressed outer record has more than one batch")
    first_magic = entries[0][1]
    for size, magic, _ in entries:
        if magic != first_magic:
            raise InvalidRecordError(
                f"Batch magic {magic} is not the same as the first batch's magic byte {first_magic}"
            )
        if size > config.max_message_bytes:
            raise RecordTooLargeError(size, config.max_message_bytes)
    decoded = decode_message_set(
        message_set,
        max_decompressed_size=decompression_bound(config),
        max_records=MAX_RECORDS_PER_BATCH,
        progress=progress_of(budget.take_decompressed if budget else None, checkpoint),
    )
    if decoded.truncated or decoded.valid_bytes != len(message_set):
        raise CorruptRecordError("message set ends inside a message")
    if budget is not None:
        budget.take_records(sum(len(batch.records) for batch in decoded.batches))
    target = config.compression
    converted = up_convert_message_set(
        decoded,
        compression=None if target is None else target.compression,
        level=None if target is None else target.level,
        base_offset=0,
        progress=progress_of(None, checkpoint),
    )
    return bytearray(converted)
