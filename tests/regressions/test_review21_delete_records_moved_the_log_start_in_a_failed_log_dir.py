"""DeleteRecords moved the log start of a partition whose log dir had failed, and answered NONE.

A dir goes offline when storage sees an I/O error in it; the broker takes its partitions offline later
(ReplicaManager.handle_log_dir_failure, behind the replica state-change lock). Until then an append
there is refused KAFKA_STORAGE_ERROR at once (session 20's review), but DeleteRecords went on: the
client was told its records were deleted on a disk the broker had declared failed, whose log start
no checkpoint would ever record. Kafka's maybeIncrementLogStartOffset first checks the log's dir
(checkIfMemoryMappedBufferClosed) and answers KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from odradek.partition.delete_records import delete_records
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.unit.partition.two_log_dirs import two_log_dirs
from tests.unit.storage.helpers import batch


def test_delete_records_in_a_failed_log_dir_is_a_storage_error_before_the_dir_is_handled(
    tmp_path: Path,
) -> None:
    with two_log_dirs(tmp_path) as made:
        for partition in (0, 1):
            for _ in range(3):
                made.replicas.append_records(TopicPartition("t", partition), batch(), AppendOrigin.CLIENT, 1)
        made.logs.failures.mark_offline(made.failing.dir.parent, OSError(errno.EIO, "Input/output error"))

        with pytest.raises(KafkaError) as refused:
            delete_records(made.replicas, made.logs, "t", 0, 2)
        assert refused.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert made.failing.log_start_offset == 0

        assert delete_records(made.replicas, made.logs, "t", 1, 2) == 2
