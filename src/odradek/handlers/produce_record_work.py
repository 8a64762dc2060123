"""A Produce's record work, off the event loop: one job per admitted partition in the record workers
(handlers/record_jobs.py), within one budget per request (storage/prepared_appends.py).

A partition needs a job when its batch is rewritten in the topic's codec, when a rule of the topic
reads its records (a compacted topic's keys, timestamp bounds), and for every old producer's message
set (converted up to a v2 batch in the topic's codec); the others are appended as they came, with no
thread hop.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.record_jobs import run_record_jobs
from odradek.handlers.produce_admission import Admitted
from odradek.protocol.records import iter_batch_headers
from odradek.storage.config import LogConfig
from odradek.storage.prepared_appends import PreparedAppend, RecordBudget, needs_record_work, prepare_append
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.record_workers import Checkpoint
from odradek.storage.up_conversion import prepare_message_set

PartitionKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class _Work:
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


async def prepare_records(
    admitted: dict[PartitionKey, Admitted], context: RequestContext
) -> dict[PartitionKey, PreparedAppend]:
    """The record work of the admitted partitions that need some, done in the record workers."""
    budget = RecordBudget()
    work: dict[PartitionKey, _Work] = {}
    for key, partition in admitted.items():
        config, now = partition.log.config, partition.log.clock()
        if partition.message_set or needs_record_work(partition.records, config, now, AppendOrigin.CLIENT):
            work[key] = _Work(partition.records, partition.message_set, config, now, budget)
    return await run_record_jobs(work, context)
