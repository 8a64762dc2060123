"""An append as leader to a partition whose log dir has failed is KAFKA_STORAGE_ERROR at once, before the
broker has taken the dir's partitions offline.

A dir goes offline when storage sees an I/O error in it; the broker's handler then stops serving its
partitions (ReplicaManager.handle_log_dir_failure), after the replica state-change lock, which a
LeaderAndIsr holds while it creates logs in worker threads. Until then, appends to the dir's other
partitions went on and were acknowledged: records answered NONE on a disk the broker had declared
failed, and would not serve again before a restart.
"""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.unit.partition.two_log_dirs import two_log_dirs
from tests.unit.storage.helpers import batch


def test_an_append_to_a_partition_of_a_failed_log_dir_is_refused_before_the_dir_is_handled(
    tmp_path: Path,
) -> None:
    with two_log_dirs(tmp_path) as made:
        failing, healthy, replicas = made.failing, made.healthy, made.replicas
        # an I/O error in another partition's file of that dir (a roll, a checkpoint): offline
        made.logs.failures.mark_offline(failing.dir.parent, OSError(errno.EIO, "Input/output error"))

        with pytest.raises(KafkaError) as refused:
            replicas.append_records(TopicPartition("t", 0), batch(), AppendOrigin.CLIENT, 1)
        assert refused.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        assert failing.log_end_offset == 0

        appended = replicas.append_records(TopicPartition("t", 1), batch(), AppendOrigin.CLIENT, 1)
        assert (appended.base_offset, healthy.log_end_offset) == (0, 1)
