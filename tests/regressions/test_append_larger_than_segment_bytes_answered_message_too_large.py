"""An append larger than the topic's segment.bytes was answered MESSAGE_TOO_LARGE, on which producers
split the batch and retry; Kafka answers RECORD_LIST_TOO_LARGE (UnifiedLog.append's
RecordBatchTooLargeException), which no client retries, and keeps MESSAGE_TOO_LARGE for
max.message.bytes."""

from __future__ import annotations

from pathlib import Path

from odradek.partition.errors import error_code_for
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.errors import StorageError
from tests.unit.storage.helpers import FakeClock, batch, open_log


def _refusal(tmp_path: Path, **config: object) -> StorageError:
    log = open_log(tmp_path / "t-0", FakeClock(), **config)
    try:
        log.append(batch([bytes(2000)]))
    except StorageError as refused:
        assert log.log_end_offset == 0
        return refused
    raise AssertionError("appended")


def test_an_append_larger_than_segment_bytes_is_record_list_too_large(tmp_path: Path) -> None:
    refused = _refusal(tmp_path, segment_bytes=1500)
    assert error_code_for(refused) is ErrorCode.RECORD_LIST_TOO_LARGE
    assert "segment.bytes" in str(refused)


def test_a_batch_larger_than_max_message_bytes_stays_message_too_large(tmp_path: Path) -> None:
    refused = _refusal(tmp_path, max_message_bytes=1500)
    assert error_code_for(refused) is ErrorCode.MESSAGE_TOO_LARGE
