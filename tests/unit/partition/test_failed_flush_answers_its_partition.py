"""A produce's due fsync failing in one log dir answers that partition KAFKA_STORAGE_ERROR, and only it.

Kafka flushes a log that reached flush.messages inside its append (UnifiedLog.append under
maybeHandleIOException): an I/O error there is a KafkaStorageException for that partition alone, and
the request's other partitions are answered as their appends went. The fsync of a failed dir raised
out of ReplicaManager.complete_appends instead: the whole request was answered KAFKA_STORAGE_ERROR,
partitions appended (and fsynced, or not: the loop stopped at the first failure) to healthy dirs
included, so a producer retried them and wrote them twice without idempotence.
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.config import LogConfig
from odradek.storage.flush import FlushJob
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.unit.storage.helpers import batch

pytestmark = pytest.mark.timeout(30)


def test_a_failed_fsync_answers_its_own_partition_and_the_others_are_fsynced_and_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed: list[Path] = []
    logs = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(), on_log_dir_failure=failed.append)
    logs.startup()
    try:
        every = LogConfig(flush_messages=1)
        broken = logs.get_or_create_log("t", 0, config=every)
        healthy = logs.get_or_create_log("t", 1, config=every)
        assert broken.dir.parent != healthy.dir.parent
        replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), logs)
        replicas.lead_alone("t", None, [0, 1])

        run = FlushJob._run

        def failing_disk(job: FlushJob) -> None:
            if any(segment in broken.segments for segment in job.segments):
                raise OSError(errno.EIO, "Input/output error")
            run(job)

        monkeypatch.setattr(FlushJob, "_run", failing_disk)
        appends = [
            replicas.append_records(TopicPartition("t", partition), batch(), AppendOrigin.CLIENT, -1)
            for partition in (0, 1)
        ]

        outcomes = asyncio.run(replicas.complete_appends(appends, timeout_ms=30_000))

        assert outcomes == [ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NONE]
        assert healthy.recovery_point == 1  # fsynced before its answer, as flush.messages=1 asks
        assert failed == [broken.dir.parent]  # the dir is offline: the broker takes its partitions away
    finally:
        monkeypatch.undo()
        logs.shutdown()
