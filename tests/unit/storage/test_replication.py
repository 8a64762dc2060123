"""What replication needs from a log: leader epochs, follower appends, truncation, settable HW."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.protocol.records import iter_record_batches
from odradek.storage.config import LogConfig
from odradek.storage.errors import InvalidRecordError
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log

from .helpers import FakeClock, batch, read_records, values

CONFIG = LogConfig(segment_bytes=300)


def test_leader_epochs_are_stamped_and_answer_offset_for_leader_epoch(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    for _ in range(3):
        log.append(batch(), leader_epoch=0)
    for _ in range(2):
        log.append(batch(), leader_epoch=2)
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.end_offset_for_epoch(1) == (0, 3)
    assert log.end_offset_for_epoch(2) == (2, 5)
    assert log.end_offset_for_epoch(3) == (-1, -1)
    epochs = [b.partition_leader_epoch for b in iter_record_batches(log.read(0, 1 << 20).read_bytes())]
    assert epochs[0] == 0
    (tmp_path / "t-0" / "leader-epoch-checkpoint").unlink()  # recovery re-derives it from batch headers
    again = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    assert again.end_offset_for_epoch(0) == (0, 3)
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n2\n0 0\n2 3\n"


def test_follower_appends_keep_offsets_and_epochs(tmp_path: Path) -> None:
    clock = FakeClock()
    leader = Log.open(tmp_path / "leader-0", CONFIG, clock=clock)
    for i in range(6):
        leader.append(batch([b"r%d" % i]), leader_epoch=4)
    follower = Log.open(tmp_path / "follower-0", CONFIG, clock=clock, auto_high_watermark=False)
    offset = 0
    while offset < leader.log_end_offset:
        data = leader.read(offset, 1 << 20, isolation=FetchIsolation.LOG_END).read_bytes()
        result = follower.append_as_follower(bytearray(data))
        offset = result.last_offset + 1
    assert follower.log_end_offset == 6 and follower.high_watermark == 0
    follower.update_high_watermark(6)
    assert values(read_records(follower)) == [b"r%d" % i for i in range(6)]
    assert follower.latest_epoch == 4
    with pytest.raises(InvalidRecordError):
        follower.append_as_follower(
            bytearray(leader.read(0, 100, isolation=FetchIsolation.LOG_END).read_bytes())
        )


def test_truncate_to_drops_the_tail(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    for i in range(20):
        log.append(
            batch([b"r%d" % i], producer_id=9, producer_epoch=0, base_sequence=i), leader_epoch=i // 10
        )
    removed = log.truncate_to(7)
    for segment in removed:
        segment.delete_files()
    assert log.log_end_offset == 7 and log.high_watermark == 7
    assert values(read_records(log)) == [b"r%d" % i for i in range(7)]
    assert log.latest_epoch == 0
    entry = log.producer_state.last_entry(9)
    assert entry is not None and entry.last_seq == 6  # producer state rebuilt from what is left
    assert log.append(batch([b"new"]), leader_epoch=2).base_offset == 7
    reopened = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    assert values(read_records(reopened))[-2:] == [b"r6", b"new"]


def test_truncate_fully_and_start_at(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, clock=FakeClock())
    for _ in range(5):
        log.append(batch())
    for segment in log.truncate_fully_and_start_at(100):
        segment.delete_files()
    assert log.log_start_offset == log.log_end_offset == 100
    assert log.append(batch()).base_offset == 100
    assert [p.name for p in sorted((tmp_path / "t-0").glob("*.log"))] == ["00000000000000000100.log"]
