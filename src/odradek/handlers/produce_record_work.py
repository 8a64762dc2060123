"""A Produce's record work, off the event loop: one job per admitted partition in the record workers
(storage/record_workers.py), queued under the client's connection so that connections take turns,
within one budget per request (storage/prepared_appends.py).

A partition needs a job when its batch is rewritten in the topic's codec, when a rule of the topic
reads its records (a compacted topic's keys, timestamp bounds), and for every old producer's message
set (converted up to a v2 batch in the topic's codec); the others are appended as they came, with no
thread hop. A request whose work the broker stopped (it is shutting down) closes its connection, as
Kafka drops the requests it has not handled when it stops.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from dataclasses import dataclass

from odradek.handlers.context import CloseConnection, RequestContext
from odradek.handlers.produce_admission import Admitted
from odradek.protocol.records import iter_batch_headers
from odradek.storage.config import LogConfig
from odradek.storage.prepared_appends import PreparedAppend, RecordBudget, needs_record_work, prepare_append
from odradek.storage.producer_state import AppendOrigin
from odradek.storage.record_workers import Checkpoint, RecordJob, WorkStopped
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
    return await _run(work, context)


async def _run(
    work: dict[PartitionKey, _Work], context: RequestContext
) -> dict[PartitionKey, PreparedAppend]:
    if not work:
        return {}
    workers = context.services.record_workers
    owner: Hashable = (context.client_host, context.client_port)
    jobs: dict[PartitionKey, RecordJob[PreparedAppend]] = {
        key: workers.submit(owner, job) for key, job in work.items()
    }
    try:
        results = await asyncio.gather(*(asyncio.wrap_future(job.future) for job in jobs.values()))
    except WorkStopped as stopped:
        for job in jobs.values():
            workers.abandon(job)
        raise CloseConnection(f"produce not appended: {stopped}") from stopped
    except BaseException:  # cancelled (the connection closed) or failed: the rest is not awaited
        for job in jobs.values():
            workers.abandon(job)
        raise
    return dict(zip(jobs, results, strict=True))
