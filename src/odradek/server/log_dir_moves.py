"""The broker's copies of replicas moving between its log dirs (Kafka's ReplicaAlterLogDirsThread).

Each future log (storage/log_moves.py) is copied a step at a time on the loop, so produce and fetch are
served in between; once one has caught up it is fsynced (in a worker thread, the copy going on),
caught up again and swapped in for the current log in the same turn of the loop, so no append falls
between. In a cluster the replica manager then serves the new log (its follower fetches into it).

The copies are throttled as Kafka's ReplicaAlterLogDirsThread: every byte copied is recorded on the
broker's alter-log-dirs quota (replica.alter.log.dirs.io.max.bytes.per.second), and while its measured
rate is over the bound no step starts; the task waits THROTTLED_BACKOFF_S, as Kafka's thread waits
replica.fetch.backoff.ms when it has no fetch to make (its default: that setting is a cluster's, with
no effect on a single node, which moves replicas too). A step may take the rate over the bound (at
most STEP_BYTES, as a fetch of Kafka's), the next one waits for it to come back under.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from odradek.cluster.replication.replication_quota import ReplicationQuota
from odradek.storage.errors import StorageError
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.log_moves import copy_to_future
from odradek.storage.partition import TopicPartition

log = logging.getLogger("odradek.broker")

#: The most one step copies of one partition (as replica.fetch.max.bytes bounds a follower's fetch).
STEP_BYTES = 1 << 20
#: How often the task looks for new moves while none is under way.
IDLE_S = 0.2
#: How long the copies wait while the alter-log-dirs quota is exceeded (replica.fetch.backoff.ms's default).
THROTTLED_BACKOFF_S = 1.0

#: Told that a partition's log was replaced by its moved copy (the replica manager serves it then).
LogReplaced = Callable[[TopicPartition, Log], None]


async def run_log_dir_moves(
    logs: LogManager,
    on_replaced: LogReplaced | None = None,
    *,
    quota: ReplicationQuota | None = None,
    backoff_s: float = THROTTLED_BACKOFF_S,
    clock_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000),
    wait: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Copy every future log until it can be swapped in; until cancelled. A failure in one move is
    logged and that move stops (its future log goes); the others go on. ``quota``: the broker's
    alter-log-dirs quota (measured on ``clock_ms``); while it is exceeded the task ``wait``s
    ``backoff_s``."""
    synced: dict[TopicPartition, Log] = {}
    while True:
        futures = logs.future_logs
        if not futures:
            synced.clear()
            await asyncio.sleep(IDLE_S)
            continue
        copied = 0
        for tp, future in futures.items():
            current = logs.get_log(*tp)
            if current is None or logs.future_logs.get(tp) is not future:
                continue
            if quota is not None and quota.is_quota_exceeded(clock_ms()):
                await wait(backoff_s)
                break  # the futures may have changed meanwhile: looked up again
            try:
                step = copy_to_future(current, future, STEP_BYTES, logs.deletions.schedule_deletion)
                if quota is not None and step:
                    quota.record(step, clock_ms())
                copied += step
                if future.log_end_offset < current.log_end_offset:
                    if step:
                        await asyncio.sleep(0)  # one partition's step at a time: requests go between
                    continue
                if synced.get(tp) is not future:
                    # fsynced before the swap: the old copy is removed soon after
                    job = future.prepare_flush()
                    if job is not None:
                        await asyncio.to_thread(job.run)
                        future.complete_flush(job)
                    synced[tp] = future
                    continue  # caught up again at the next step, then swapped
                new, old = logs.moves.swap(tp)
            except Exception:
                log.exception("moving %s to another log dir failed: the move stops", tp)
                try:
                    abandoned = logs.moves.cancel_move(*tp)
                except (OSError, StorageError):  # its dir failed: gone with the dir (handled there)
                    continue
                if abandoned is not None:
                    logs.deletions.schedule_file_deletion(abandoned, 0)
                continue
            synced.pop(tp, None)
            logs.deletions.schedule_file_deletion(old, new.config.file_delete_delay_ms)
            if on_replaced is not None:
                on_replaced(tp, new)
            await asyncio.sleep(0)  # one partition's step at a time: requests are served between
        await asyncio.sleep(0 if copied else 0.01)
