"""What an append to a partition this broker leads made (partition/replica_manager.py's
`append_records`): where its records went, and what an acks=all answer waits for.

An idempotent producer's retry of a batch already in the log is an append too, answered with the
offsets the batch got the first time (Kafka's duplicate detection answers NONE): it wrote nothing, so
it notifies nobody, but it is answered only once its log is fsynced if due (the first attempt's fsync
may still run, or have failed: Kafka's is inside that append) and, with acks=all, once the ISR holds
those offsets (the first attempt may have timed out waiting).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from odradek.partition.delayed_produce import AwaitingReplicas
from odradek.storage.errors import StorageError
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition

_log = logging.getLogger(__name__)


# Not frozen: one is made per append, and a frozen dataclass's __init__ (object.__setattr__ per field)
# costs about 2 us for these ten fields, 0.4 us otherwise (docs/bench/architecture-steps.md).
@dataclass(slots=True)
class LeaderAppend:
    partition: TopicPartition
    #: The log appended to (the partition's at the time of the append).
    log: Log
    #: The leader epoch stamped on the batches: the partition's, never the metadata cache's.
    leader_epoch: int
    base_offset: int
    last_offset: int
    #: The broker time stamped on LogAppendTime batches, else -1 (also for a duplicate).
    log_append_time: int
    log_start_offset: int
    #: Records written; 0 for a duplicate, which wrote nothing.
    records_count: int
    duplicate: bool
    #: The acks=all wait it needs; None when the high watermark passed it at the append (a leader alone
    #: in its ISR moves it with the append) or acks is not -1.
    waiting: AwaitingReplicas | None

    def completed_at_append(self) -> bool:
        """Whether its answer is known now, without `complete_appends`: nothing to wait for (acks is not
        -1, or its leader is alone in the ISR, as a single node's) and no fsync due."""
        return self.waiting is None and not self.log.flush_needed()


async def flush_if_due(appends: Iterable[LeaderAppend]) -> set[int]:
    """fsync the logs whose flush.messages / flush.ms is due, off the loop, before acknowledging (Kafka's
    LocalLog flushes in the append itself once flush.messages are unflushed). Returns the `id` of each
    log whose fsync failed: its dir is offline now (storage marked it), and as in Kafka, where the flush
    fails inside that partition's append, only its appends are answered KAFKA_STORAGE_ERROR; the
    others' logs are still fsynced and their appends answered as they went."""
    failed: set[int] = set()
    for log in {id(a.log): a.log for a in appends}.values():
        try:
            await flush_log_if_due(log)
        except (StorageError, OSError) as error:  # a dir failing is logged where it is marked
            _log.debug("fsync of %s failed: %s", log.dir, error)
            failed.add(id(log))
    return failed


async def flush_logs_if_due(logs: Iterable[Log]) -> None:
    """`flush_if_due` for logs appended to earlier (each fsynced once)."""
    for log in {id(log): log for log in logs}.values():
        await flush_log_if_due(log)


async def flush_log_if_due(log: Log) -> None:
    """fsync `log` off the loop if its flush.messages / flush.ms is due (also a follower's append,
    partition/follower_append.py)."""
    if log.flush_needed():
        job = log.prepare_flush()
        if job is not None:
            await asyncio.to_thread(job.run)
            log.complete_flush(job)
