"""Running a request's record work in the record workers (storage/record_workers.py), one job per
partition, queued under the client's connection so that connections take turns.

A request whose work the broker stopped (it is shutting down) closes its connection unanswered, as
Kafka drops the requests it has not handled when it stops; a request nobody waits for any more (its
connection closed, or another of its jobs failed) has its other jobs abandoned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

from odradek.handlers._common.context import CloseConnection, RequestContext
from odradek.storage.record_workers import Checkpoint, RecordJob, WorkStopped

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


async def run_record_jobs(work: Mapping[K, Callable[[Checkpoint], T]], context: RequestContext) -> dict[K, T]:
    """Each job's result, by key; a job's exception is raised (the others abandoned)."""
    if not work:
        return {}
    workers = context.services.record_workers
    owner: Hashable = (context.client_host, context.client_port)
    jobs: dict[K, RecordJob[T]] = {key: workers.submit(owner, job) for key, job in work.items()}
    try:
        results = await asyncio.gather(*(asyncio.wrap_future(job.future) for job in jobs.values()))
    except WorkStopped as stopped:
        for job in jobs.values():
            workers.abandon(job)
        raise CloseConnection(f"request not handled: {stopped}") from stopped
    except BaseException:  # cancelled (the connection closed) or failed: the rest is not awaited
        for job in jobs.values():
            workers.abandon(job)
        raise
    return dict(zip(jobs, results, strict=True))
