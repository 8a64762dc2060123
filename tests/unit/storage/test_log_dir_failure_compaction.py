"""I/O errors inside log compaction (Kafka's LogCleaner.cleanLog and LogCleanerManager): an error
reading or writing a segment while cleaning takes the log dir offline as an append error does; any
other error marks the partition uncleanable (skipped from then on) and the dir stays online. A cleaning
that failed leaves no ``.cleaned`` or ``.swap`` file a restart would install."""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from odradek.storage.cleaner import run_cleaning
from odradek.storage.config import LogConfig
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.segment import LogSegment

from .helpers import FakeClock, batch, led_alone

COMPACT = {"cleanup.policy": "compact", "segment.bytes": 300}
TOPIC_ID = uuid.uuid4()


def _manager(tmp_path: Path, failed: list[Path]) -> LogManager:
    manager = LogManager(
        [tmp_path / "d1", tmp_path / "d2"], LogConfig(), clock=FakeClock(), on_log_dir_failure=failed.append
    )
    manager.startup()
    manager.save_topic("c", TOPIC_ID, 2, COMPACT)
    return manager


def _dirty(manager: LogManager, partition: int) -> Log:
    log = led_alone(manager.get_or_create_log("c", partition))
    for i in range(20):
        log.append(batch([(b"k", b"v%d" % i)]))
    log.roll()
    return log


def _fail_reads_in(
    monkeypatch: pytest.MonkeyPatch, log_dir: Path, error: Callable[[], BaseException]
) -> None:
    """Reads of the segments under ``log_dir`` raise ``error()`` (a disk failing under the cleaner)."""
    read_bytes = LogSegment.read_bytes

    def failing(segment: LogSegment, position: int, length: int) -> bytes:
        if segment.log_path.parent.parent == log_dir:
            raise error()
        return read_bytes(segment, position, length)

    monkeypatch.setattr(LogSegment, "read_bytes", failing)


def _clean_all(manager: LogManager) -> None:
    """What the broker's compaction task does (run_cleaning in a worker thread)."""
    for log, plan in manager.cleaner.compaction_plans():
        try:
            result = run_cleaning(plan)
        except Exception as error:
            manager.cleaner.compaction_failed(log, plan, error)
            continue
        manager.cleaner.complete_compaction(log, result)


def _leftovers(log: Log) -> list[str]:
    return sorted(n for n in os.listdir(log.dir) if n.endswith((".cleaned", ".swap")))


def test_an_io_error_reading_a_segment_while_cleaning_takes_its_log_dir_offline_and_the_other_is_cleaned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    first, second = _dirty(manager, 0), _dirty(manager, 1)
    assert first.dir.parent != second.dir.parent
    _fail_reads_in(monkeypatch, first.dir.parent, lambda: OSError(errno.EIO, "Input/output error"))

    _clean_all(manager)

    assert failed == [first.dir.parent]
    assert _leftovers(first) == []
    assert second.cleaner_checkpoint == second.segments[-1].base_offset  # the other dir was cleaned
    assert manager.handle_log_dir_failure(first.dir.parent) == [TopicPartition("c", 0)]


def test_a_cleaning_error_that_is_not_an_io_error_marks_the_partition_uncleanable_and_the_dir_stays_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's tryCleanFilthiestLog: a LogCleaningException marks the partition uncleanable, so it is
    not tried (and logged) again at every backoff while the others are cleaned."""
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    first, second = _dirty(manager, 0), _dirty(manager, 1)
    _fail_reads_in(monkeypatch, first.dir.parent, lambda: ValueError("a corrupt batch"))

    _clean_all(manager)

    assert failed == []
    assert manager.cleaner.uncleanable_partitions == {TopicPartition("c", 0)}
    assert [log for log, _ in manager.cleaner.compaction_plans()] == []  # c-0 skipped, c-1 clean
    assert second.cleaner_checkpoint == second.segments[-1].base_offset
    assert _leftovers(first) == []
    first.append(batch([(b"k", b"more")]))  # the partition still serves
    manager.deletions.delete_log("c", 0)
    assert (
        manager.cleaner.uncleanable_partitions == set()
    )  # forgotten with the log (maintainUncleanablePartitions)


def test_a_failure_in_a_later_group_leaves_no_swap_file_of_an_earlier_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each group of segments becomes one cleaned segment; those already written when a later group
    fails must go too: a `.swap` file left behind is installed by the next start, over whatever the log
    holds at those offsets by then."""
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    manager.save_topic("c", TOPIC_ID, 2, {**COMPACT, "segment.bytes": 150})  # one group per segment
    log = _dirty(manager, 0)
    (plan_log, plan), *_ = manager.cleaner.compaction_plans()
    assert plan_log is log and len(plan.segments) > 2
    read_bytes = LogSegment.read_bytes
    last = plan.segments[-1]

    def failing(segment: LogSegment, position: int, length: int) -> bytes:
        if segment is last:
            raise OSError(errno.EIO, "Input/output error")
        return read_bytes(segment, position, length)

    monkeypatch.setattr(LogSegment, "read_bytes", failing)
    with pytest.raises(OSError):
        run_cleaning(plan)
    assert _leftovers(log) == []


def test_an_io_error_swapping_the_cleaned_segments_in_takes_the_log_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap renames files on the loop; one failing there is the dir failing (whatever renames were
    done are finished or undone by the loader at the next start), not an error out of the periodic job."""
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    log = _dirty(manager, 0)
    (_, plan), *_ = manager.cleaner.compaction_plans()
    result = run_cleaning(plan)
    change_suffix = LogSegment.change_suffix

    def failing(segment: LogSegment, new_suffix: str) -> None:
        if new_suffix == "":
            raise OSError(errno.EIO, "Input/output error")
        change_suffix(segment, new_suffix)

    monkeypatch.setattr(LogSegment, "change_suffix", failing)
    with pytest.raises(LogStorageError):
        manager.cleaner.complete_compaction(log, result)
    assert failed == [log.dir.parent]


def test_a_cleaning_whose_segments_retention_closed_meanwhile_is_let_go_with_the_dir_online(
    tmp_path: Path,
) -> None:
    """Retention (cleanup.policy compact,delete) may remove and close segments while they are being
    cleaned: reading them then fails (EBADF), which is the race, not the disk (Kafka aborts such a
    cleaning). Neither the dir nor the partition is marked."""
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    log = _dirty(manager, 0)
    (_, plan), *_ = manager.cleaner.compaction_plans()
    for segment in plan.segments[:2]:
        segment.close()  # what retention's file deletion does once file.delete.delay.ms has passed
    with pytest.raises(OSError) as raised:
        run_cleaning(plan)
    manager.cleaner.compaction_failed(log, plan, raised.value)
    assert failed == []
    assert manager.cleaner.uncleanable_partitions == set()
    assert _leftovers(log) == []


def test_a_swap_file_a_failed_cleaning_cannot_remove_takes_the_log_dir_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cleaning that fails other than by an I/O error (a corrupt batch in a later group) removes the
    earlier groups' `.swap` files; one that cannot be removed (the disk) would be installed by the next
    start over what the log holds by then, so the dir goes offline rather than the partition being
    marked uncleanable with the dir serving on."""
    failed: list[Path] = []
    manager = _manager(tmp_path, failed)
    manager.save_topic("c", TOPIC_ID, 2, {**COMPACT, "segment.bytes": 150})  # one group per segment
    log = _dirty(manager, 0)
    (_, plan), *_ = manager.cleaner.compaction_plans()
    read_bytes = LogSegment.read_bytes
    last = plan.segments[-1]

    def corrupt(segment: LogSegment, position: int, length: int) -> bytes:
        if segment is last:
            raise ValueError("a corrupt batch")
        return read_bytes(segment, position, length)

    def undeletable(segment: LogSegment) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(LogSegment, "read_bytes", corrupt)
    monkeypatch.setattr(LogSegment, "delete_files", undeletable)

    _clean_all(manager)

    assert _leftovers(log) != []  # the disk kept them
    assert failed == [log.dir.parent]
