"""An idempotent producer's retry of a batch whose first append was not yet fsynced was answered at
once, before the records were on disk, under flush.messages=1.

A topic that asks for an fsync per message acknowledges nothing before it. The producer's first attempt
is appended and its fsync runs in a worker thread; the producer, its request timed out or its connection
lost, sends the batch again, and the retry is found in the log: a duplicate, answered with the first
attempt's offsets. The duplicate was never fsynced ("it wrote nothing"), so its answer went out while
the first attempt's fsync had yet to finish, or had failed: a power loss then lost an acknowledged
record. In Kafka the fsync is inside the first append itself, under the log's lock, so no retry can
see the batch before it is on disk. Here the retry's answer waits for an fsync of what its log holds.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from odradek.storage.producer_state import AppendOrigin
from tests.unit.storage.helpers import batch


def test_a_retry_of_a_batch_not_yet_fsynced_is_answered_once_it_is(tmp_path: Path) -> None:
    logs = LogManager([tmp_path / "d1"], LogConfig())
    logs.startup()
    try:
        logs.get_or_create_log("t", 0)
        logs.apply_topic_config("t", LogConfig.from_mapping({"flush.messages": "1"}))
        replicas = ReplicaManager(1, ClusterMetadata("c", -1, []), logs)
        replicas.lead_alone("t", None, [0])
        tp = TopicPartition("t", 0)
        records = batch(producer_id=5, producer_epoch=0, base_sequence=0)

        first = replicas.append_records(tp, bytearray(records), AppendOrigin.CLIENT, 1)
        log = first.log
        in_flight = log.prepare_flush()  # the first attempt's fsync, still running in its thread
        assert in_flight is not None and log.recovery_point == 0

        retry = replicas.append_records(tp, bytearray(records), AppendOrigin.CLIENT, 1)
        assert retry.duplicate and retry.base_offset == 0
        assert not retry.completed_at_append()
        assert asyncio.run(replicas.complete_appends([retry], 1000)) == [ErrorCode.NONE]
        assert log.recovery_point == 1  # answered once on disk
    finally:
        logs.shutdown()
