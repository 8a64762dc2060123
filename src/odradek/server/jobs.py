"""The broker's periodic storage jobs (Kafka's LogManager scheduler tasks, the cleaner's backoff loop,
the token expiry and the idle-connection expiry) and the tasks storage's events wake, each one asyncio
task the broker cancels at shutdown.

Slow file work runs in worker threads; storage's prepare/run/complete split keeps each state change on
the event loop. A job that fails is logged and runs again at its next interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Collection

from odradek.cluster.metadata.topics import TopicAdmin
from odradek.cluster.replication.replication_quota import ReplicationQuota
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.config.broker import BrokerConfig
from odradek.partition.replica_manager import ReplicaManager as PartitionReplicas
from odradek.security.delegation_tokens import DelegationTokenManager
from odradek.server.connection import Connection
from odradek.server.log_dir_failures import handle_log_dir_failures
from odradek.server.log_dir_moves import run_log_dir_moves
from odradek.server.storage_work import run_file_deletions, run_storage_work
from odradek.storage import cleaner
from odradek.storage.checkpoint_jobs import CheckpointWriteError
from odradek.storage.errors import LogStorageError, StorageError
from odradek.storage.flush import FlushJob
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition

log = logging.getLogger("odradek.broker")


class StorageJobs:
    """Retention, flushes, checkpoints, compaction, producer and token expiry, on the intervals the
    (dynamic) configuration names."""

    def __init__(
        self,
        logs: LogManager,
        live_config: Callable[[], BrokerConfig],
        topics: TopicAdmin,
        delegation_tokens: DelegationTokenManager | None,
        *,
        checkpoint_high_watermarks: bool,
    ) -> None:
        self.logs = logs
        self.live_config = live_config
        self.topics = topics
        self.delegation_tokens = delegation_tokens
        #: A cluster member's high watermarks are checkpointed on their own interval; a single node's
        #: high watermark is its log end, which the recovery checkpoint already holds.
        self.checkpoint_high_watermarks = checkpoint_high_watermarks

    def start(self, config: BrokerConfig, tokens_enabled: bool) -> list[asyncio.Task[None]]:
        """Start every job `config` turns on; the caller cancels the tasks returned."""
        tasks = [
            self._every("log.retention.check.interval.ms", self.retention),
            self._every("log.flush.scheduler.interval.ms", self.flush, fallback_ms=1000),
            self._every("log.flush.offset.checkpoint.interval.ms", self.checkpoint),
        ]
        if self.checkpoint_high_watermarks:
            tasks.append(
                self._every("replica.high.watermark.checkpoint.interval.ms", self.checkpoint_high_watermark)
            )
        if config.log_cleaner_enable:  # as Kafka: when false no cleaner runs, nothing is compacted
            tasks.append(self._every("log.cleaner.backoff.ms", self.compaction))
        tasks.append(self._every("producer.id.expiration.check.interval.ms", self.expire_producers))
        if tokens_enabled:
            tasks.append(
                self._every("delegation.token.expiry.check.interval.ms", self.expire_delegation_tokens)
            )
        return tasks

    def _every(
        self, config_name: str, job: Callable[[], Awaitable[None]], fallback_ms: int = 300_000
    ) -> asyncio.Task[None]:
        return every(self.live_config, config_name, job, fallback_ms)

    async def retention(self) -> None:
        await self.topics.finish_deletions()
        self.logs.cleanup_logs()
        job = self.logs.deletions.take_file_deletions()
        await asyncio.to_thread(job.run)

    async def flush(self) -> None:
        jobs = self.logs.flushes.prepare_flushes()
        if jobs:
            done = await asyncio.to_thread(_run_each, jobs)
            self.logs.flushes.complete_flushes(done)

    async def checkpoint(self) -> None:
        job = self.logs.flushes.prepare_checkpoint()
        # a file that could not be written took its log dir offline (the others were written)
        with contextlib.suppress(CheckpointWriteError):
            await asyncio.to_thread(job.run)

    async def checkpoint_high_watermark(self) -> None:
        job = self.logs.flushes.prepare_high_watermark_checkpoint()
        with contextlib.suppress(CheckpointWriteError):
            await asyncio.to_thread(job.run)

    async def compaction(self) -> None:
        for cleaned_log, plan in self.logs.cleaner.compaction_plans():
            try:
                result = await asyncio.to_thread(cleaner.run_cleaning, plan)
            except Exception as error:
                # an I/O error takes the dir offline, any other makes the partition uncleanable; the
                # other logs are still cleaned
                self.logs.cleaner.compaction_failed(cleaned_log, plan, error)
                continue
            with contextlib.suppress(StorageError):  # a failed swap took its log dir offline
                self.logs.cleaner.complete_compaction(cleaned_log, result)

    async def expire_producers(self) -> None:
        self.logs.remove_expired_producers()

    async def expire_delegation_tokens(self) -> None:
        if self.delegation_tokens is not None:
            await self.delegation_tokens.expire_tokens()


def every(
    live_config: Callable[[], BrokerConfig],
    config_name: str,
    job: Callable[[], Awaitable[None]],
    fallback_ms: int = 300_000,
) -> asyncio.Task[None]:
    """Run `job` every `config_name` milliseconds, until the task is cancelled."""

    async def loop() -> None:
        while True:
            # read each time: a dynamic interval (log.cleaner.backoff.ms) applies from the next wait
            value = live_config()[config_name]  # the caller names the interval setting
            interval_ms = value if isinstance(value, int) else fallback_ms
            await asyncio.sleep(max(interval_ms, 10) / 1000)
            try:
                await job()
            except Exception:
                log.exception("periodic job %s failed", job.__name__)

    return asyncio.get_running_loop().create_task(loop())


async def close_idle_connections(connections: Collection[Connection], idle_ms: int) -> None:
    """Kafka's idle expiry: a connection whose client has sent nothing and taken none of its answers
    for connections.max.idle.ms is closed, answers pending or not (see Connection.idle_for)."""
    while True:
        await asyncio.sleep(min(max(idle_ms / 4000, 0.05), 30))
        now = time.monotonic()
        for connection in list(connections):
            if connection.idle_for(now) * 1000 > idle_ms:
                connection.expire(idle_ms)


def file_work_tasks(
    logs: LogManager,
    replicas: PartitionReplicas,
    truncation_checkpoints: TruncationCheckpoints,
    *,
    storage_work_due: asyncio.Event,
    log_dir_failure_due: asyncio.Event,
    notify_controller: Callable[[], Awaitable[None]] | None,
    alter_log_dirs_quota: ReplicationQuota,
) -> list[asyncio.Task[None]]:
    """The tasks storage's events wake: file deletions, failed log dirs, log-dir moves (Kafka's
    ReplicaAlterLogDirsThread), and the flushes and checkpoints rolls and truncations make due."""
    loop = asyncio.get_running_loop()
    tasks = [
        loop.create_task(run_file_deletions(logs)),
        loop.create_task(handle_log_dir_failures(logs, log_dir_failure_due, replicas, notify_controller)),
        loop.create_task(run_log_dir_moves(logs, _replace_hosted_log(replicas), quota=alter_log_dirs_quota)),
    ]
    if logs.offline_log_dirs:  # a dir that failed while the broker was starting
        log_dir_failure_due.set()
    tasks.append(loop.create_task(run_storage_work(logs.flushes, truncation_checkpoints, storage_work_due)))
    return tasks


def _replace_hosted_log(replicas: PartitionReplicas) -> Callable[[TopicPartition, Log], None]:
    def replaced(tp: TopicPartition, new: Log) -> None:
        replicas.replace_log((tp.topic, tp.partition), new)

    return replaced


def _run_each(jobs: list[tuple[Log, FlushJob]]) -> list[tuple[Log, FlushJob]]:
    """The flushes that ran; one that failed took its log dir offline and the others still run."""
    done = []
    for flushed, job in jobs:
        try:
            job.run()
        except LogStorageError:
            continue
        done.append((flushed, job))
    return done
