"""The rules of a log about the records of a client's batch, applied to a walk of them
(``protocol.records.walk_records``), as Kafka's LogValidator applies them to every record it iterates:
a compacted topic takes only records with a key (INVALID_RECORD), and a CreateTime record's timestamp
must lie within ``message.timestamp.before.max.ms`` / ``.after.max.ms`` of the broker's clock
(INVALID_TIMESTAMP). Both name the records at fault (KIP-467).

Which batches are walked (``needs_walk``): a batch rewritten in the topic's codec always (its records
are read anyway); one stored as it came only when a rule needs its records, since reading them means
decompressing them: a compacted topic's, and for the timestamps only when the lower bound is set or
the header's max timestamp is past the upper one (the header settles the upper bound otherwise, where
Kafka reads every record).
"""

from __future__ import annotations

from odradek.protocol.records import NO_TIMESTAMP, RecordBatchHeader, RecordsSummary, TimestampType
from odradek.storage.config import LONG_MAX, LogConfig
from odradek.storage.errors import InvalidRecordError, InvalidTimestampError, RecordError


def timestamp_bounds(config: LogConfig, now: int) -> tuple[int, int] | None:
    """The [earliest, latest] a client's CreateTime record may carry; None for a LogAppendTime topic."""
    if config.log_append_time:
        return None
    return now - config.message_timestamp_before_max_ms, now + config.message_timestamp_after_max_ms


def needs_walk(header: RecordBatchHeader, config: LogConfig, now: int | None, client: bool) -> bool:
    """Whether a client's batch stored as it came must have its records read for the log's rules."""
    if not client or header.is_control:
        return False
    if config.compact:
        return True
    bounds = None if now is None else timestamp_bounds(config, now)
    if bounds is None or header.max_timestamp == NO_TIMESTAMP:
        return False
    return header.max_timestamp > bounds[1] or config.message_timestamp_before_max_ms < LONG_MAX


def check_records(
    header: RecordBatchHeader, summary: RecordsSummary, config: LogConfig, bounds: tuple[int, int] | None
) -> None:
    """Raise InvalidRecordError (keyless records in a compacted topic) or InvalidTimestampError
    (records outside ``bounds``; a header claiming a max timestamp past them) for a walked batch."""
    if config.compact and summary.keyless:
        raise InvalidRecordError(
            f"{len(summary.keyless)} of {summary.count} records in the batch have no key: "
            "a compacted topic accepts only records with a key",
            [RecordError(i, "record has no key, which a compacted topic requires") for i in summary.keyless],
        )
    if bounds is None:
        return
    earliest, latest = bounds
    offenders = summary.out_of_bounds
    if (
        header.timestamp_type is TimestampType.LOG_APPEND_TIME
        and not earliest <= header.max_timestamp <= latest
    ):
        # a client's batch flagged LogAppendTime: each record reads as the header's max timestamp
        offenders = [(index, header.max_timestamp) for index in range(summary.count)]
    if offenders:
        raise InvalidTimestampError(
            f"Timestamp {offenders[0][1]} of a record in the batch at offset {header.base_offset} is out of "
            f"range. The timestamp should be within [{earliest}, {latest}] ({len(offenders)} of "
            f"{summary.count} records are outside it)",
            [RecordError(index, f"timestamp {timestamp} is out of range") for index, timestamp in offenders],
        )
    if header.max_timestamp > latest:  # a header claiming more than its records: refused as before
        raise InvalidTimestampError(
            f"Timestamp {header.max_timestamp} of the batch at offset {header.base_offset} is out of range. "
            f"The timestamp should be within [{earliest}, {latest}]"
        )
