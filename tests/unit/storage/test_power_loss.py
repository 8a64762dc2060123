"""Power loss: what reaches the disk, and what a start-up does with the files a crash leaves.

A process crash keeps everything written (the page cache survives it); a power loss keeps only what
was fsynced, and a file replaced by a rename that was not fsynced may come back empty, zero-filled or
cut short. These tests build the files as such a crash leaves them and open the log again, and drive
the flushes that decide what the recovery point may claim."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from odradek.protocol.records import patch_base_offset, patch_partition_leader_epoch
from odradek.storage import log_dir_loading
from odradek.storage.checkpoints import EpochEntry, read_offset_checkpoint
from odradek.storage.config import LogConfig
from odradek.storage.fetch import FetchIsolation
from odradek.storage.files import LEADER_EPOCH_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.segment import LogSegment
from odradek.storage.stray_logs import JudgedByLeaderAndIsr
from tests.support.fsync_gate import FsyncGate

from .helpers import FakeClock, batch, marker, read_records, values

CONFIG = LogConfig(segment_bytes=300)


def _filled(directory: Path, clock: FakeClock, epochs: list[int]) -> Log:
    log = Log.open(directory, CONFIG, clock=clock, auto_high_watermark=False)
    for i, epoch in enumerate(epochs):
        log.append(batch([b"value-%02d" % i]), leader_epoch=epoch)
    return log


def test_a_segment_roll_flushes_the_old_segment_and_advances_the_recovery_point(tmp_path: Path) -> None:
    """Kafka's UnifiedLog.roll schedules a flush of everything below the new segment; here nothing
    was flushed at a roll, so with the default flush settings the recovery point stayed at 0 and every
    start after a crash recovered the whole log."""
    clock = FakeClock()
    rolled: list[bool] = []
    manager = LogManager([tmp_path], CONFIG, clock=clock, on_work_due=lambda: rolled.append(True))
    log = manager.get_or_create_log("t", 0)
    for i in range(12):
        log.append(batch([b"value-%02d" % i]))
    assert len(log.segments) >= 3 and rolled  # the manager heard of the rolls
    assert log.recovery_point == 0
    jobs = manager.flushes.take_roll_flushes()
    assert [flushed for flushed, _ in jobs] == [log]
    for _, job in jobs:
        job.run()
    manager.flushes.complete_flushes(jobs)
    assert log.recovery_point == log.active_segment.base_offset  # everything below the active segment
    assert manager.flushes.take_roll_flushes() == []  # done once
    manager.flushes.prepare_checkpoint().run()
    checkpoint = read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)
    assert checkpoint[TopicPartition("t", 0)] == log.active_segment.base_offset


def test_a_truncation_has_the_recovery_point_checkpoint_rewritten_before_the_periodic_one(
    tmp_path: Path,
) -> None:
    """Kafka's LogManager.truncateTo writes the recovery point checkpoint at once. Here the lowered
    recovery point stayed in memory until log.flush.offset.checkpoint.interval.ms (a minute), so a power
    loss meanwhile restarted with the old one, trusting, unvalidated, the offsets the follower had
    written again after the truncation and never fsynced."""
    clock = FakeClock()
    due: list[bool] = []
    manager = LogManager(
        [tmp_path], CONFIG, clock=clock, strays=JudgedByLeaderAndIsr(), on_work_due=lambda: due.append(True)
    )
    log = manager.get_or_create_log("t", 0)
    for i in range(10):
        log.append(batch([b"value-%02d" % i]))
    log.flush()
    manager.flushes.prepare_checkpoint().run()
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    assert read_offset_checkpoint(path)[TopicPartition("t", 0)] == 10
    assert manager.flushes.take_due_checkpoint() is None  # nothing asked for one
    log.truncate_to(4)
    assert due
    job = manager.flushes.take_due_checkpoint()
    assert job is not None
    job.run()
    assert read_offset_checkpoint(path)[TopicPartition("t", 0)] == 4
    assert manager.flushes.take_due_checkpoint() is None


@pytest.mark.parametrize("how", ["truncated", "started over past its end"])
def test_the_checkpoint_after_a_truncation_is_written_once_the_truncated_log_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A follower that starts over empty at its leader's log start (past its own end) renames its
    segments ``.deleted`` and raises its recovery point there; the checkpoint claimed the new one while
    the renames were not durable, so a power loss could bring the old segments back, records never
    fsynced among them, under a recovery point claiming them. The leader epoch checkpoint it rewrote was
    not fsynced either (Kafka's truncateFullyAndStartAt flushes it)."""
    clock = FakeClock()
    manager = LogManager([tmp_path], CONFIG, clock=clock, strays=JudgedByLeaderAndIsr())
    log = manager.get_or_create_log("t", 0)
    for i in range(10):
        log.append_as_follower(_at_offset(batch([b"value-%02d" % i]), i, epoch=1))
    assert len(log.segments) > 2
    if how == "truncated":
        log.truncate_to(4)
    else:
        log.truncate_fully_and_start_at(20)
    job = manager.flushes.take_due_checkpoint()
    assert job is not None
    gate = FsyncGate()
    monkeypatch.setattr(os, "fsync", gate)
    job.run()
    synced = [call.path for call in gate.calls]
    checkpoint = next(i for i, path in enumerate(synced) if RECOVERY_POINT_CHECKPOINT in path)
    directory = str(log.dir)
    assert directory in synced[:checkpoint]  # the renames and the new segment's file
    assert any(path.endswith(LEADER_EPOCH_CHECKPOINT) for path in synced[:checkpoint])
    assert manager.flushes.truncation_unsynced(log) is not None  # until completed on the loop
    manager.flushes.complete_truncation_checkpoint(job)
    assert manager.flushes.truncation_unsynced(log) is None


def test_a_high_watermark_checkpoint_written_first_does_not_void_a_truncations_recovery_point(
    tmp_path: Path,
) -> None:
    """Checkpoint writes take turns and drop a capture older than the last one written, so that no
    file goes back. The high watermark checkpoint (every replica.high.watermark.checkpoint.interval.ms)
    writes only its own file but counted as written for all four: a truncation's checkpoint taken just
    before it and run after it was dropped, and the recovery point file kept claiming the cut offsets."""
    clock = FakeClock()
    manager = LogManager([tmp_path], CONFIG, clock=clock, strays=JudgedByLeaderAndIsr())
    log = manager.get_or_create_log("t", 0)
    for i in range(10):
        log.append_as_follower(_at_offset(batch([b"value-%02d" % i]), i, epoch=1))
    log.flush()
    manager.flushes.prepare_checkpoint().run()
    log.truncate_to(4)
    truncation = manager.flushes.take_due_checkpoint()
    assert truncation is not None
    manager.flushes.prepare_high_watermark_checkpoint().run()  # its worker thread got there first
    truncation.run()
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)[TopicPartition("t", 0)] == 4
    stale = manager.flushes.prepare_checkpoint()  # a capture older than the file's next write is dropped
    for i in range(4, 7):
        log.append_as_follower(_at_offset(batch([b"value-%02d" % i]), i, epoch=2))
    log.flush()
    manager.flushes.prepare_checkpoint().run()
    stale.run()
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)[TopicPartition("t", 0)] == 7


def test_a_checkpoint_taken_before_a_second_truncation_leaves_the_log_unsynced(tmp_path: Path) -> None:
    """Each write covers the truncations before it was taken: one completing after the log was cut again
    vouches only for the first cut's recovery point."""
    clock = FakeClock()
    manager = LogManager([tmp_path], CONFIG, clock=clock, strays=JudgedByLeaderAndIsr())
    log = manager.get_or_create_log("t", 0)
    for i in range(10):
        log.append_as_follower(_at_offset(batch([b"value-%02d" % i]), i, epoch=1))
    log.flush()
    log.truncate_to(8)
    first = manager.flushes.take_due_checkpoint()
    assert first is not None
    log.truncate_to(3)
    first.run()
    manager.flushes.complete_truncation_checkpoint(first)
    assert manager.flushes.truncation_unsynced(log) is not None
    second = manager.flushes.take_due_checkpoint()
    assert second is not None
    second.run()
    manager.flushes.complete_truncation_checkpoint(second)
    assert manager.flushes.truncation_unsynced(log) is None
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT)[TopicPartition("t", 0)] == 3


def test_a_flush_completing_after_a_truncation_claims_nothing_above_the_truncation(tmp_path: Path) -> None:
    """The flush's fsyncs run in a worker thread; a follower truncating meanwhile and appending other
    records at the same offsets must not find the recovery point moved over records nobody fsynced
    (it was set to min(flush offset, log end), so the new records counted as flushed)."""
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, [0] * 10)
    job = log.prepare_flush()
    assert job is not None and job.flush_offset == 10
    log.truncate_to(4)  # the follower diverged: offsets 4.. go
    for i in range(6):  # and come again from the new leader, unflushed
        log.append_as_follower(_at_offset(batch([b"new-%d" % i]), 4 + i, epoch=1))
    job.run()
    log.complete_flush(job)
    assert log.log_end_offset == 10
    assert log.recovery_point <= 4


def test_a_roll_flush_taken_after_a_truncation_moves_the_recovery_point_only_over_what_it_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A roll asks for a flush below the new segment; a follower truncating below that before the flush
    was taken had it prepared for the old roll offset, past the log end. Records the follower then
    appended during the fsyncs were counted as flushed (the job's offset clamped by the log end at its
    completion), and since a flush lists only segments above the recovery point, none ever fsynced
    them: a power loss lost them under the recovery point, where start-up does not look."""
    clock = FakeClock()
    manager = LogManager([tmp_path], CONFIG, clock=clock, strays=JudgedByLeaderAndIsr())
    log = manager.get_or_create_log("t", 0)
    while len(log.segments) < 3:
        log.append(batch([b"value-%02d" % log.log_end_offset]))
    rolled_at = log.active_segment.base_offset
    log.truncate_to(1)  # before the storage task took the roll's flush
    jobs = manager.flushes.take_roll_flushes()
    fsynced: dict[int, int] = {}  # base offset -> the segment's next offset when fsynced
    real_flush = LogSegment.flush

    def spy(segment: LogSegment) -> None:
        fsynced[segment.base_offset] = segment.next_offset
        real_flush(segment)

    monkeypatch.setattr(LogSegment, "flush", spy)
    for _, job in jobs:
        job.run()
    while log.log_end_offset < rolled_at + 3:  # the new leader's records, appended during the fsyncs
        log.append_as_follower(_at_offset(batch([b"new-%02d" % log.log_end_offset]), log.log_end_offset, 7))
    manager.flushes.complete_flushes(jobs)
    assert log.recovery_point <= max(fsynced.values(), default=0)
    for later in manager.flushes.take_roll_flushes():  # every flush after it, until the log is flushed whole
        later[1].run()
        manager.flushes.complete_flushes([later])
    log.flush()
    assert fsynced[0] == log.segments[0].next_offset  # the first segment fsynced with what it holds


def test_a_flush_completing_after_a_full_truncation_keeps_the_new_start_as_recovery_point(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, [0] * 10)
    job = log.prepare_flush()
    assert job is not None
    log.truncate_fully_and_start_at(3)
    for i in range(7):
        log.append_as_follower(_at_offset(batch([b"new-%d" % i]), 3 + i, epoch=1))
    job.run()
    log.complete_flush(job)
    assert log.recovery_point == 3


@pytest.mark.parametrize(
    "crash_left",
    ["empty", "zero-filled", "cut short", "only the version"],
)
@pytest.mark.parametrize("clean_shutdown", [True, False], ids=["after a clean shutdown", "after a crash"])
def test_a_leader_epoch_checkpoint_a_power_loss_damaged_is_rebuilt_from_the_batches(
    tmp_path: Path, crash_left: str, clean_shutdown: bool
) -> None:
    """The checkpoint is rewritten without fsync on the event loop (as Kafka's truncations write it
    asynchronously), so power loss can leave it empty or zero-filled; start-up refused to open the
    log ("Error while reading checkpoint file") and so stopped the broker."""
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, [0, 0, 0, 2, 2, 5, 5, 5])
    expected = log.leader_epoch_cache.entries
    assert expected == [EpochEntry(0, 0), EpochEntry(2, 3), EpochEntry(5, 5)]
    if clean_shutdown:
        log.flush()
        log.close()
    path = tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT
    whole = path.read_bytes()
    damaged = {
        "empty": b"",
        "zero-filled": b"\x00" * len(whole),
        "cut short": whole[: len(whole) - 4],
        "only the version": b"0\n",
    }[crash_left]
    path.write_bytes(damaged)
    again = Log.open(
        tmp_path / "t-0",
        CONFIG,
        clock=clock,
        recovery_point=log.log_end_offset if clean_shutdown else 0,
        had_clean_shutdown=clean_shutdown,
        auto_high_watermark=False,
    )
    assert again.leader_epoch_cache.entries == expected
    assert again.end_offset_for_epoch(2) == (2, 5)
    assert path.read_text() == "0\n3\n0 0\n2 3\n5 5\n"  # and written back whole
    again.update_high_watermark(again.log_end_offset)
    assert len(values(read_records(again))) == 8


def test_a_leader_epoch_checkpoint_damaged_below_the_recovery_point_is_rebuilt_from_every_segment(
    tmp_path: Path,
) -> None:
    """Recovery re-derives epochs only above the recovery point: the rebuild must read the segments
    below it too, or the epochs written there would be forgotten."""
    clock = FakeClock()
    log = _filled(tmp_path / "t-0", clock, [1] * 6 + [3] * 6 + [4] * 2)
    log.flush()
    recovery_point = log.recovery_point
    assert len(log.segments) > 2 and recovery_point == 14
    (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).write_bytes(b"")
    again = Log.open(tmp_path / "t-0", CONFIG, clock=clock, recovery_point=recovery_point)
    assert again.leader_epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(3, 6), EpochEntry(4, 12)]


def test_a_leader_epoch_checkpoint_a_power_loss_left_stale_answers_only_for_epochs_the_log_holds(
    tmp_path: Path,
) -> None:
    """A truncation rewrites the checkpoint without fsync (as Kafka's, KAFKA-15046), so a power loss
    can bring back the previous, valid file. Recovery only added epochs newer than the file's latest,
    so an entry the truncation had removed stayed when the records written again over its offsets
    carry an older epoch: OffsetForLeaderEpoch then told a follower holding this broker's old records
    of that epoch to keep them."""
    clock = FakeClock()
    directory = tmp_path / "t-0"
    log = Log.open(directory, LogConfig(), clock=clock, auto_high_watermark=False)
    for i in range(10):  # epoch 4's leader wrote 0..9 (and went on to 13)
        log.append_as_follower(_at_offset(batch([b"e4-%d" % i]), i, epoch=4))
    log.leader_epoch_cache.assign(5, 10)  # this broker then led at epoch 5 and wrote 10..14
    for i in range(5):
        log.append(batch([b"e5-%d" % i]), leader_epoch=5)
    log.flush()  # fsyncs the checkpoint [(4, 0), (5, 10)] too
    durable = (directory / LEADER_EPOCH_CHECKPOINT).read_bytes()
    log.truncate_to(10)  # epoch 6's leader had epoch 4 up to 13: this broker follows it
    for i in range(10, 14):
        log.append_as_follower(_at_offset(batch([b"e4-%d" % i]), i, epoch=4))
    log.append_as_follower(_at_offset(batch([b"e6-14"]), 14, epoch=6))
    assert log.leader_epoch_cache.entries == [EpochEntry(4, 0), EpochEntry(6, 14)]
    assert log.recovery_point <= 10
    (directory / LEADER_EPOCH_CHECKPOINT).write_bytes(durable)  # the power loss
    again = Log.open(
        directory, LogConfig(), clock=clock, recovery_point=log.recovery_point, auto_high_watermark=False
    )
    assert again.leader_epoch_cache.entries == [EpochEntry(4, 0), EpochEntry(6, 14)]
    assert again.end_offset_for_epoch(5) == (4, 14)


@pytest.mark.parametrize("name", [RECOVERY_POINT_CHECKPOINT, "log-start-offset-checkpoint"])
def test_an_empty_offset_checkpoint_reads_as_no_entries_as_in_kafka(tmp_path: Path, name: str) -> None:
    """Kafka's CheckpointFile reads an empty file as no entries (it creates its checkpoint files empty
    before the first write); it stopped our start-up."""
    clock = FakeClock()
    manager = LogManager([tmp_path], CONFIG, clock=clock)
    manager.save_topic("t", uuid.UUID(int=1), 1)
    log = manager.get_or_create_log("t", 0, topic_id=uuid.UUID(int=1))
    for i in range(5):
        log.append(batch([b"value-%d" % i]))
    (tmp_path / name).write_bytes(b"")
    again = LogManager([tmp_path], CONFIG, clock=clock)
    again.startup()
    reopened = again.get_log("t", 0)
    assert reopened is not None and reopened.log_end_offset == 5


def _at_offset(records: bytearray, offset: int, epoch: int) -> bytearray:
    """A batch as a leader hands it to a follower: offset and leader epoch already assigned."""
    patch_base_offset(records, 0, offset)
    patch_partition_leader_epoch(records, 0, epoch)
    return records


@pytest.mark.parametrize("damage", ["partial entry", "wrong version"])
def test_an_unreadable_transaction_index_below_the_recovery_point_is_rebuilt_not_emptied(
    tmp_path: Path, damage: str
) -> None:
    """A segment whose .txnindex did not load had its indexes rebuilt without producer state, with the
    transaction index left empty: the aborted transactions it held were forgotten, and read_committed
    consumers got the aborted records. Kafka recovers such a segment with its producer state."""
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    log.append(batch([b"aborted"], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True))
    log.append(marker(commit=False, producer_id=7), origin=AppendOrigin.COORDINATOR)
    for i in range(12):
        log.append(batch([b"after-%d" % i]))
    assert len(log.segments) >= 3
    first = log.segments[0]
    assert first.txn_index.entries
    log.flush()
    log.close()
    with open(first.txn_index.path, "r+b") as index:
        if damage == "partial entry":
            index.seek(0, 2)
            index.write(b"\x00\x00\x00")
        else:
            index.write(b"\x00\x07")
    again = Log.open(
        tmp_path / "t-0", CONFIG, clock=clock, recovery_point=log.log_end_offset, had_clean_shutdown=True
    )
    info = again.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert info.aborted_transactions is not None
    assert [txn.producer_id for txn in info.aborted_transactions] == [7]
    assert again.log_end_offset == log.log_end_offset


def test_an_unreadable_transaction_index_has_only_its_own_segment_recovered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recovering that segment needs producer state replayed up to it, and the loader got it by
    recovering the log from that segment to its end, even after a clean shutdown: every later segment
    was read and validated again. Kafka's LogLoader recovers that one segment."""
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", CONFIG, clock=clock)
    log.append(batch([b"aborted"], producer_id=7, producer_epoch=0, base_sequence=0, transactional=True))
    log.append(marker(commit=False, producer_id=7), origin=AppendOrigin.COORDINATOR)
    for i in range(12):
        log.append(batch([b"after-%d" % i], producer_id=8, producer_epoch=0, base_sequence=i))
    assert len(log.segments) >= 3
    damaged = log.segments[0]
    log.flush()
    log.close()
    with open(damaged.txn_index.path, "r+b") as index:
        index.write(b"\x00\x07")
    recovered: list[int] = []
    real_recover = LogSegment.recover

    def spy(segment: LogSegment, *args: object, **kwargs: object) -> int:
        recovered.append(segment.base_offset)
        return real_recover(segment, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LogSegment, "recover", spy)
    again = Log.open(
        tmp_path / "t-0", CONFIG, clock=clock, recovery_point=log.log_end_offset, had_clean_shutdown=True
    )
    assert recovered == [damaged.base_offset]
    info = again.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert info.aborted_transactions is not None
    assert [txn.producer_id for txn in info.aborted_transactions] == [7]
    assert again.log_end_offset == log.log_end_offset
    assert again.producer_state.producers[8].last_seq == 11  # the log's producer state is whole


def test_the_clean_shutdown_marker_is_durably_gone_before_the_logs_are_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its removal at start was not fsynced: a power loss soon after could bring the marker back, and
    the next start would trust, without recovery, segments written after it."""
    clock = FakeClock()
    manager = LogManager([tmp_path], CONFIG, clock=clock)
    manager.startup()
    manager.shutdown()
    assert (tmp_path / ".kafka_cleanshutdown").exists()
    synced: list[tuple[Path, bool]] = []

    def record(directory: Path) -> None:
        synced.append((directory, (tmp_path / ".kafka_cleanshutdown").exists()))

    monkeypatch.setattr(log_dir_loading, "fsync_dir", record)
    LogManager([tmp_path], CONFIG, clock=clock).startup()
    assert (tmp_path, False) in synced  # the log dir fsynced once the marker was gone
