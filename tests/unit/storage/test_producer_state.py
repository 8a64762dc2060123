"""Idempotent producers and transactions: duplicates, sequences, epochs, LSO, restarts, expiry."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
)
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.producer_state import AppendOrigin

from .helpers import FakeClock, batch, marker, read_records, values

PID = 4000


def _send(log: Log, seq: int, count: int = 2, epoch: int = 0, pid: int = PID, **kw: object) -> object:
    data = batch(
        [b"s%d" % (seq + i) for i in range(count)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        **kw,  # type: ignore[arg-type]
    )
    return log.append(data)


def _open(directory: Path, clock: FakeClock, **kw: object) -> Log:
    return Log.open(directory, LogConfig(segment_bytes=300), clock=clock, **kw)  # type: ignore[arg-type]


def test_duplicate_batch_answers_with_original_offsets(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    _send(log, 0)
    _send(log, 2)
    _send(log, 4)
    with pytest.raises(DuplicateSequenceError) as dup:
        _send(log, 2)
    assert (dup.value.base_offset, dup.value.last_offset) == (2, 3)
    assert log.log_end_offset == 6  # nothing written


def test_only_the_last_five_batches_are_remembered(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    for seq in range(0, 12, 2):
        _send(log, seq)
    with pytest.raises(DuplicateSequenceError):
        _send(log, 2)  # the 5th from last
    with pytest.raises(OutOfOrderSequenceError):
        _send(log, 0)  # forgotten: now just out of order


def test_out_of_order_sequence(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    _send(log, 0)
    with pytest.raises(OutOfOrderSequenceError):
        _send(log, 5)
    _send(log, 2)


def test_epoch_fencing_and_bumps(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    _send(log, 0, epoch=1)
    with pytest.raises(InvalidProducerEpochError):
        _send(log, 2, epoch=0)
    with pytest.raises(OutOfOrderSequenceError):
        _send(log, 7, epoch=2)  # a new epoch starts at sequence 0
    _send(log, 0, epoch=2)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 2


def test_unknown_producer_is_accepted_at_any_sequence(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    _send(log, 42)  # state expired or deleted with its segments (KIP-360)
    _send(log, 44)


def test_producer_state_survives_clean_restart_and_crash(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _open(tmp_path / "t-0", clock)
    for seq in range(0, 20, 2):
        _send(log, seq)
    assert len(log.segments) > 1
    log.flush()
    log.close()
    clean = _open(tmp_path / "t-0", clock, recovery_point=20, had_clean_shutdown=True)
    with pytest.raises(DuplicateSequenceError) as dup:
        _send(clean, 18)
    assert dup.value.base_offset == 18
    # Kafka's snapshot file keeps a producer's last batch only: an older retry is out of order, as on Kafka
    with pytest.raises(OutOfOrderSequenceError):
        _send(clean, 16)
    _send(clean, 20)
    # crash (no close): snapshot at a segment boundary plus replay of the tail
    crashed = _open(tmp_path / "t-0", clock)
    with pytest.raises(DuplicateSequenceError):
        _send(crashed, 20)
    with pytest.raises(OutOfOrderSequenceError):
        _send(crashed, 30)
    _send(crashed, 22)


def test_snapshot_files_are_written_at_rolls(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    for seq in range(0, 20, 2):
        _send(log, seq)
    snapshots = sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert snapshots
    assert all(name[:20] in {f"{s.base_offset:020d}" for s in log.segments} for name in snapshots)


def test_expired_producers_are_forgotten(tmp_path: Path) -> None:
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", LogConfig(), clock=clock, producer_id_expiration_ms=1000)
    _send(log, 0)
    clock.advance(999)
    assert log.remove_expired_producers() == []
    clock.advance(1)  # expiry counts from the batch timestamp (START_MS)
    assert log.remove_expired_producers() == [PID]
    _send(log, 9)  # unknown again: any sequence


def test_transactions_bound_the_last_stable_offset(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    log.append(batch([b"plain"]))
    _send(log, 0, pid=1, transactional=True)  # offsets 1-2
    _send(log, 0, pid=2, transactional=True)  # offsets 3-4
    assert log.last_stable_offset == 1 and log.high_watermark == 5
    log.append(marker(commit=False, producer_id=1), origin=AppendOrigin.COORDINATOR)  # offset 5
    assert log.last_stable_offset == 3
    with pytest.raises(InvalidTxnStateError):
        _send(log, 2, pid=2)  # non-transactional write inside an open transaction
    log.append(marker(commit=True, producer_id=2), origin=AppendOrigin.COORDINATOR)  # offset 6
    assert log.last_stable_offset == log.high_watermark == 7

    committed = log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert committed.aborted_transactions is not None
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(1, 1)]
    assert log.read(0, 1 << 20).aborted_transactions is None
    assert values(read_records(log))[:3] == [b"plain", b"s0", b"s1"]


def test_read_committed_stops_before_open_transactions(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    log.append(batch([b"a"]))
    _send(log, 0, pid=1, transactional=True)
    log.append(batch([b"b"]))
    records = read_records(log, isolation=FetchIsolation.TXN_COMMITTED)
    assert [r.offset for r in records] == [0]


def test_transaction_index_survives_recovery(tmp_path: Path) -> None:
    clock = FakeClock()
    log = _open(tmp_path / "t-0", clock)
    _send(log, 0, pid=1, transactional=True)
    log.append(marker(commit=False, producer_id=1), origin=AppendOrigin.COORDINATOR)
    _send(log, 0, pid=2, transactional=True)
    again = _open(tmp_path / "t-0", clock)  # crash: recovery rebuilds the .txnindex
    assert again.last_stable_offset == 3
    info = again.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    aborted = info.aborted_transactions or ()
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(1, 0, 2)]


def test_clients_may_not_write_markers_and_old_epochs_are_fenced(tmp_path: Path) -> None:
    log = _open(tmp_path / "t-0", FakeClock())
    with pytest.raises(InvalidRecordError):
        log.append(marker(commit=True, producer_id=1))
    _send(log, 0, pid=1, epoch=3, transactional=True)
    with pytest.raises(InvalidProducerEpochError):
        log.append(marker(commit=True, producer_id=1, producer_epoch=2), origin=AppendOrigin.COORDINATOR)
