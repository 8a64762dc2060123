"""message.timestamp.before/after.max.ms: CreateTime records too far from the broker's clock are refused
(INVALID_TIMESTAMP), as Kafka's LogValidator refuses them; the log is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.partition.errors import error_code_for
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import Compression
from odradek.storage.errors import InvalidTimestampError
from odradek.storage.producer_state import AppendOrigin

from .helpers import START_MS, FakeClock, batch, open_log

HOUR = 60 * 60 * 1000


def test_a_record_more_than_an_hour_ahead_is_refused_by_default(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    log.append(batch([b"a"], timestamp=START_MS + HOUR))  # the bound itself is accepted
    with pytest.raises(InvalidTimestampError) as refused:
        log.append(batch([b"b", b"c"], timestamps=[START_MS, START_MS + HOUR + 1]))
    assert error_code_for(refused.value) is ErrorCode.INVALID_TIMESTAMP
    assert str(START_MS + HOUR + 1) in str(refused.value)
    assert log.log_end_offset == 1  # nothing of the refused batch was written


def test_old_records_are_accepted_by_default(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    log.append(batch([b"a"], timestamp=0))
    assert log.log_end_offset == 1


def test_the_lower_bound_checks_every_record_not_only_the_first(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), message_timestamp_before_max_ms=1000)
    log.append(batch([b"a", b"b"], timestamps=[START_MS - 1000, START_MS]))
    for compression in (Compression.NONE, Compression.LZ4):
        late = batch(
            [b"c", b"d", b"e"], timestamps=[START_MS, START_MS - 1001, START_MS], compression=compression
        )
        with pytest.raises(InvalidTimestampError):
            log.append(late)
    assert log.log_end_offset == 2


def test_the_upper_bound_is_the_topic_config(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), message_timestamp_after_max_ms=0)
    log.append(batch([b"a"], timestamp=START_MS))
    with pytest.raises(InvalidTimestampError):
        log.append(batch([b"b"], timestamp=START_MS + 1))


def test_log_append_time_topics_and_the_broker_s_own_appends_are_not_checked(tmp_path: Path) -> None:
    stamped = open_log(tmp_path / "a-0", FakeClock(), message_timestamp_type="LogAppendTime")
    stamped.append(batch([b"a"], timestamp=START_MS + 10 * HOUR))
    assert stamped.log_end_offset == 1
    internal = open_log(tmp_path / "b-0", FakeClock())
    internal.append(batch([b"a"], timestamp=START_MS + 10 * HOUR), origin=AppendOrigin.COORDINATOR)
    assert internal.log_end_offset == 1
