"""A topic's compression.type other than producer: batches in another codec are stored in the topic's
(at its compression.<codec>.level), as Kafka's LogValidator rebuilds them while it assigns offsets;
batches already in that codec, and every batch of a `producer` topic, keep the no-copy path."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from odradek.protocol.records import (
    Compression,
    RecordBatch,
    RecordBatchHeader,
    TargetCompression,
    UnsupportedCompressionError,
    compress,
    iter_batch_headers,
    iter_record_batches,
    recompress_batch,
)
from odradek.protocol.records.header import HEADER_SIZE, patch_partition_leader_epoch, write_crc
from odradek.storage import prepared_appends
from odradek.storage.config import LogConfig
from odradek.storage.errors import (
    DuplicateSequenceError,
    InvalidLogConfigError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
)
from odradek.storage.fetch import FetchIsolation
from odradek.storage.log import Log
from odradek.storage.log_append import validate_batches
from odradek.storage.prepared_appends import PreparedAppend, needs_record_work, prepare_append
from odradek.storage.producer_state import AppendOrigin
from tests.support.hand_built_batches import hand_built_batch, hand_built_record

from .helpers import START_MS, FakeClock, batch, marker, open_log, read_records, values

TOPIC_CODECS = {
    "uncompressed": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}
PAIRS = list(itertools.product(Compression, TOPIC_CODECS))
VALUES = [b"value-%d " % i * 20 for i in range(30)]


def _stored(log: Log) -> list[RecordBatch]:
    return list(iter_record_batches(log.read(0, 1 << 30, isolation=FetchIsolation.LOG_END).read_bytes()))


@pytest.mark.parametrize(("source", "topic_codec"), PAIRS, ids=[f"{s.name}->{t}" for s, t in PAIRS])
def test_a_batch_is_stored_in_the_topic_codec_whatever_the_producer_used(
    tmp_path: Path, source: Compression, topic_codec: str
) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type=topic_codec)
    first = log.append(batch(VALUES[:10], compression=source))
    second = log.append(batch(VALUES[10:], compression=source))
    assert (first.base_offset, first.last_offset, second.base_offset, second.last_offset) == (0, 9, 10, 29)
    stored = _stored(log)
    assert [b.compression for b in stored] == [TOPIC_CODECS[topic_codec]] * 2
    assert [r.offset for r in read_records(log)] == list(range(30))
    assert values(read_records(log)) == VALUES
    assert {r.timestamp for r in read_records(log)} == {START_MS}


@pytest.mark.parametrize("topic_codec", ["producer", "lz4"])
def test_the_producers_bytes_are_kept_without_a_copy_when_no_codec_change_is_needed(
    tmp_path: Path, topic_codec: str
) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type=topic_codec)
    log.append(batch([b"first"], compression=Compression.LZ4))
    sent = batch([b"a", b"b"], compression=Compression.LZ4)
    log.append(sent)
    # The offsets were patched into the producer's own buffer, which is what was written.
    assert RecordBatchHeader.read(sent).base_offset == 1
    assert log.read(1, 1 << 20).read_bytes() == bytes(sent)


def test_the_level_written_is_the_topics(tmp_path: Path) -> None:
    sent = batch(VALUES, compression=Compression.SNAPPY)
    records = RecordBatch.decode(batch(VALUES)).records
    for level in (1, 9):
        log = open_log(
            tmp_path / f"t{level}-0", FakeClock(), compression_type="gzip", compression_gzip_level=level
        )
        log.append(bytearray(sent))
        (stored,) = _stored(log)
        assert stored.records == records
        raw = log.read(0, 1 << 20).read_bytes()
        body = bytes(batch(VALUES)[HEADER_SIZE:])
        assert raw[HEADER_SIZE:] == compress(Compression.GZIP, body, level=level)


def test_an_idempotent_retry_of_a_recompressed_batch_gets_its_first_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="zstd")
    log.append(batch([b"x"]))
    first = log.append(batch([b"a", b"b"], producer_id=7, producer_epoch=0, base_sequence=0))
    with pytest.raises(DuplicateSequenceError) as retried:
        log.append(batch([b"a", b"b"], producer_id=7, producer_epoch=0, base_sequence=0))
    assert (retried.value.base_offset, retried.value.last_offset) == (first.base_offset, first.last_offset)
    log.append(batch([b"c"], producer_id=7, producer_epoch=0, base_sequence=2))
    stored = _stored(log)
    assert [(b.producer_id, b.base_sequence, b.compression) for b in stored[1:]] == [
        (7, 0, Compression.ZSTD),
        (7, 2, Compression.ZSTD),
    ]
    assert values(read_records(log)) == [b"x", b"a", b"b", b"c"]


def test_transactional_batches_keep_their_flag_and_markers_stay_uncompressed(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="gzip")
    log.append(batch([b"aborted"], producer_id=1, producer_epoch=0, base_sequence=0, transactional=True))
    log.append(marker(commit=False, producer_id=1), origin=AppendOrigin.COORDINATOR)
    log.append(batch([b"kept"], producer_id=2, producer_epoch=0, base_sequence=0, transactional=True))
    log.append(marker(commit=True, producer_id=2), origin=AppendOrigin.COORDINATOR)
    stored = _stored(log)
    assert [(b.compression, b.is_transactional, b.is_control) for b in stored] == [
        (Compression.GZIP, True, False),
        (Compression.NONE, True, True),
        (Compression.GZIP, True, False),
        (Compression.NONE, True, True),
    ]
    assert values(read_records(log, isolation=FetchIsolation.TXN_COMMITTED)) == [b"aborted", b"kept"]
    committed = log.read(0, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions or ()] == [(1, 0)]


def test_a_batch_larger_than_max_message_bytes_once_recompressed_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="uncompressed", max_message_bytes=1000)
    small = batch([bytes(5000)], compression=Compression.ZSTD)
    assert len(small) < 1000
    with pytest.raises(RecordTooLargeError) as refused:
        log.append(small)
    assert "max.message.bytes" in str(refused.value)
    assert log.log_end_offset == 0


def test_a_batch_decompressing_past_the_broker_s_bound_is_record_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        prepared_appends, "DEFAULT_MAX_DECOMPRESSED_SIZE", 1024 * 1024
    )  # 128 MiB in the broker
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="gzip")
    bomb = batch([bytes(1024 * 1024)], compression=Compression.ZSTD)
    assert len(bomb) < 1000
    with pytest.raises(RecordTooLargeError, match="decompress"):
        log.append(bomb)
    assert log.log_end_offset == 0


def test_log_append_time_topics_stamp_the_recompressed_batch(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, compression_type="lz4", message_timestamp_type="LogAppendTime")
    clock.advance(5000)
    result = log.append(batch([b"a", b"b"], compression=Compression.GZIP))
    (stored,) = _stored(log)
    assert stored.compression is Compression.LZ4 and result.log_append_time == START_MS + 5000
    assert {r.timestamp for r in stored.records} == {START_MS + 5000}


def test_a_changed_compression_type_applies_from_the_next_append(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock())
    log.append(batch([b"a"], compression=Compression.SNAPPY))
    log.update_config(LogConfig(compression_type="zstd"))
    log.append(batch([b"b"], compression=Compression.SNAPPY))
    assert [b.compression for b in _stored(log)] == [Compression.SNAPPY, Compression.ZSTD]


def _prepared(records: bytearray, config: LogConfig) -> PreparedAppend:
    headers = validate_batches(records, config, AppendOrigin.CLIENT)
    return prepare_append(records, headers, config, START_MS)


def test_batches_recompressed_ahead_of_the_append_are_used_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = LogConfig(compression_type="zstd", compression_zstd_level=7)
    log = Log.open(tmp_path / "t-0", config, clock=FakeClock())
    sent = batch(VALUES, compression=Compression.GZIP)
    prepared = _prepared(sent, config)
    expected = recompress_batch(sent, 0, TargetCompression(Compression.ZSTD, 7))
    assert prepared.stored is not None
    assert bytes(prepared.stored[HEADER_SIZE:]) == bytes(expected[HEADER_SIZE:])

    def not_again(*_: object) -> bytearray:
        raise AssertionError("the append compressed the batch again")

    monkeypatch.setattr(prepared_appends, "rebuild_batch", not_again)
    log.append(sent, prepared=prepared)
    assert log.read(0, 1 << 20).read_bytes()[HEADER_SIZE:] == bytes(expected[HEADER_SIZE:])


def test_batches_recompressed_for_a_config_that_changed_since_are_recompressed_again(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="zstd")
    sent = batch(VALUES, compression=Compression.GZIP)
    prepared = _prepared(sent, LogConfig(compression_type="snappy"))
    log.append(sent, prepared=prepared)
    assert [b.compression for b in _stored(log)] == [Compression.ZSTD]
    other = batch([b"other"], compression=Compression.GZIP)
    same_size = batch([b"OTHER"], compression=Compression.GZIP)
    assert len(same_size) == len(other)
    log.append(other, prepared=_prepared(same_size, log.config))  # prepared for other bytes
    assert values(read_records(log))[-1] == b"other"


def test_nothing_needs_record_work_when_no_batch_needs_a_new_codec_nor_a_rule_its_records() -> None:
    def needs(records: bytearray, **settings: object) -> bool:
        return needs_record_work(records, LogConfig(**settings), START_MS, AppendOrigin.CLIENT)  # type: ignore[arg-type]

    assert not needs(batch([b"a"]))
    assert not needs(batch([b"a"], compression=Compression.LZ4), compression_type="lz4")
    assert needs(batch([b"a"], compression=Compression.LZ4), compression_type="zstd")
    assert needs(batch([b"a"]), cleanup_policy=("compact",))
    assert needs(batch([b"a"]), message_timestamp_before_max_ms=1000)
    assert not needs(bytearray(b"not a batch at all"), compression_type="lz4")
    assert not needs(marker(commit=True, producer_id=1), compression_type="lz4")


def test_every_batch_of_a_multi_batch_append_is_recompressed_on_its_own(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="snappy")
    appended = (
        batch([b"a", b"b"], compression=Compression.GZIP)
        + batch([b"c"])
        + batch([b"d"], compression=Compression.SNAPPY)
    )
    log.append(appended, origin=AppendOrigin.COORDINATOR)
    headers = list(iter_batch_headers(log.read(0, 1 << 20).read_bytes()))
    assert [(h.base_offset, h.records_count, h.compression) for h in headers] == [
        (0, 2, Compression.SNAPPY),
        (2, 1, Compression.SNAPPY),
        (3, 1, Compression.SNAPPY),
    ]


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"compression_type": "brotli"}, "compression.type"),
        ({"compression_gzip_level": 10}, "compression.gzip.level"),
        ({"compression_lz4_level": 0}, "compression.lz4.level"),
        ({"compression_zstd_level": 23}, "compression.zstd.level"),
    ],
)
def test_a_codec_or_level_kafka_refuses_is_an_invalid_log_config(
    settings: dict[str, object], named: str
) -> None:
    with pytest.raises(InvalidLogConfigError, match=named.replace(".", r"\.")):
        LogConfig(**settings)  # type: ignore[arg-type]


def test_a_codec_id_no_codec_has_is_unsupported_compression_when_the_topic_would_rewrite_it(
    tmp_path: Path,
) -> None:
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="zstd")
    odd = batch([b"a"])
    odd[22] |= 0x05  # attributes' codec bits: 5, which no Kafka codec has
    write_crc(odd, 0, len(odd))
    with pytest.raises(UnsupportedCompressionError):
        log.append(odd)
    assert log.log_end_offset == 0


@pytest.mark.parametrize(
    ("records", "count"),
    [
        pytest.param(hand_built_record(0, b"only one"), 3, id="fewer-records-than-declared"),
        pytest.param(b"\xff" * 64, 3, id="not-records-at-all"),
    ],
)
def test_a_batch_whose_records_do_not_read_as_its_header_says_is_invalid_record_not_stored(
    tmp_path: Path, records: bytes, count: int
) -> None:
    # Rewritten with a fresh, valid CRC over whatever the payload held, it could not be read back.
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="zstd")
    with pytest.raises(InvalidRecordError):
        log.append(hand_built_batch(records, Compression.GZIP, count=count))
    assert log.log_end_offset == 0


def test_a_record_past_the_timestamp_bound_hidden_under_the_header_s_max_is_invalid_timestamp_when_rewritten(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, compression_type="zstd")
    ten_years = 10 * 365 * 24 * 3600 * 1000
    records = hand_built_record(0, b"a") + hand_built_record(1, b"b", timestamp_delta=ten_years)
    sent = hand_built_batch(records, Compression.GZIP, count=2, base_timestamp=clock(), max_timestamp=clock())
    with pytest.raises(InvalidTimestampError) as refused:
        log.append(sent)
    assert [e.batch_index for e in refused.value.record_errors] == [1]
    assert log.log_end_offset == 0


def test_a_rewritten_batch_gets_consecutive_offsets_and_its_records_max_timestamp(tmp_path: Path) -> None:
    clock = FakeClock()
    log = open_log(tmp_path / "t-0", clock, compression_type="lz4")
    records = hand_built_record(0, b"a") + hand_built_record(0, b"b", timestamp_delta=70)
    log.append(hand_built_batch(records, Compression.SNAPPY, count=2, base_timestamp=clock()))
    (stored,) = _stored(log)
    assert [(r.offset, r.value) for r in stored.records] == [(0, b"a"), (1, b"b")]
    assert stored.max_timestamp == clock() + 70


def test_work_prepared_for_a_batch_differing_only_where_its_crc_does_not_look_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CRC-32C covers a batch from its attributes on: two batches of one size and one CRC may still
    # differ (here the partition leader epoch), so the prepared work is checked against the bytes.
    log = open_log(tmp_path / "t-0", FakeClock(), compression_type="zstd")
    sent = batch(VALUES, compression=Compression.GZIP)
    other = bytearray(sent)
    patch_partition_leader_epoch(other, 0, 7)
    prepared = _prepared(other, log.config)
    rebuilt: list[int] = []
    real = prepared_appends.rebuild_batch

    def spy(*args: object, **kwargs: object) -> bytearray:
        rebuilt.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prepared_appends, "rebuild_batch", spy)
    log.append(sent, prepared=prepared)
    assert rebuilt == [1]
