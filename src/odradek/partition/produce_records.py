"""A Produce's record work, off the event loop (Kafka's UnifiedLog.analyzeAndValidateRecords and
LogValidator, where they read records): one job per admitted partition, which the handler runs in the
record workers (handlers/_common/record_jobs.py), within one budget per request
(storage/prepared_appends.py).

A partition needs a job when its batch is rewritten in the topic's codec, when a rule of the topic
reads its records (a compacted topic's keys, timestamp bounds), and for every old producer's message
set (converted up to a v2 batch in the topic's codec); the others are appended as they came, with no
thread hop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from odradek.partition.hosted_partition import PartitionKey
from odradek.partition.produce_admission import Admitted
from odradek.protocol.records import iter_batch_headers
from odradek.storage.config import LogConfig
from odradek.storage.prepared_appends import PreparedAppend, RecordBudget, needs_record_work, prepare_append
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.record_workers import Checkpoint
from odradek.storage.up_conversion import prepare_message_set


def record_jobs(admitted: Mapping[PartitionKey, Admitted]) -> dict[PartitionKey, RecordWork]:
    """A job for each admitted partition that needs record work; the jobs share one record budget."""
    budget = RecordBudget()
    work: dict[PartitionKey, RecordWork] = {}
    for key, partition in admitted.items():
        config, now = partition.log.config, partition.log.clock()
        if partition.message_set or needs_record_work(partition.records, config, now, AppendOrigin.CLIENT):
            work[key] = RecordWork(partition.records, partition.message_set, config, now, budget)
    return work


def stale(
    admitted: Mapping[PartitionKey, Admitted], prepared: Mapping[PartitionKey, PreparedAppend]
) -> dict[PartitionKey, Admitted]:
    """The partitions whose work was done under a topic config that changed meanwhile: done once more
    (else the append would do it again itself, on the loop)."""
    return {
        key: partition
        for key, partition in admitted.items()
        if key in prepared and prepared[key].config != partition.log.config
    }


@dataclass(frozen=True, slots=True)
class RecordWork:
    """One partition's record work: a rewrite, a walk of its records, or a message set's conversion."""

    records: bytearray | memoryview
    message_set: bool
    config: LogConfig
    now: int
    budget: RecordBudget

    def __call__(self, checkpoint: Checkpoint) -> PreparedAppend:
        if self.message_set:
            return prepare_message_set(
                self.records, self.config, self.now, budget=self.budget, checkpoint=checkpoint
            )
        headers = list(iter_batch_headers(self.records))  # validated whole at admission
        return prepare_append(
            self.records, headers, self.config, self.now, budget=self.budget, checkpoint=checkpoint
        )
