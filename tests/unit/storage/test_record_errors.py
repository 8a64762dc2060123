"""KIP-467 at the storage edge: a refused append names the records at fault (index in the batch, and
why), for keyless records in a compacted topic and for CreateTime records out of the timestamp
bounds; the append is still refused whole and the log is left as it was."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from odradek.protocol.records.header import MAX_TIMESTAMP_OFFSET, write_crc
from odradek.storage.errors import InvalidRecordError, InvalidTimestampError

from .helpers import START_MS, FakeClock, batch, open_log

HOUR = 60 * 60 * 1000


def test_keyless_records_of_a_compacted_topic_are_each_named(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), cleanup_policy=("compact",))
    values = [(None if i in (1, 4) else b"k%d" % i, b"v") for i in range(6)]
    with pytest.raises(InvalidRecordError) as refused:
        log.append(batch(values))
    assert [(e.batch_index, "no key" in e.message) for e in refused.value.record_errors] == [
        (1, True),
        (4, True),
    ]
    assert "2 of 6 records" in str(refused.value)
    assert log.log_end_offset == 0


def test_records_past_the_upper_timestamp_bound_are_each_named(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    late = START_MS + HOUR + 1
    with pytest.raises(InvalidTimestampError) as refused:
        log.append(batch([b"a", b"b", b"c"], timestamps=[late, START_MS, late]))
    assert [e.batch_index for e in refused.value.record_errors] == [0, 2]
    assert log.log_end_offset == 0


def test_a_batch_header_claiming_a_later_max_timestamp_than_its_records_is_still_refused(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    lying = batch([b"a"], timestamp=START_MS)
    struct.pack_into(">q", lying, MAX_TIMESTAMP_OFFSET, START_MS + 2 * HOUR)
    write_crc(lying, 0, len(lying))
    with pytest.raises(InvalidTimestampError) as refused:
        log.append(lying)
    assert refused.value.record_errors == ()
    assert log.log_end_offset == 0
