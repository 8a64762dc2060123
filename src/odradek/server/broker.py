"""The broker process: loads the logs, serves the listeners, runs the periodic jobs, shuts down cleanly.

One asyncio loop owns all broker state. Slow file work (recovery at start-up, fsync, retention deletes,
compaction, checkpoints, new partitions) runs in worker threads via `asyncio.to_thread`, with storage's
prepare/run/complete split keeping every state change on the loop. The listeners serve once the topics
are loaded and, on a first start, `__consumer_offsets` is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.dynamic_configs import DynamicBrokerConfigs
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.topics import TopicAdmin
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.producer_ids import ProducerIdManager
from odradek.handlers.fetch_sessions import FetchSessionCache
from odradek.handlers.services import Services
from odradek.server import metrics
from odradek.server.connection import Connection
from odradek.server.delayed import AppendNotifier
from odradek.server.framing import ReadScratch
from odradek.storage.config import LogConfig
from odradek.storage.errors import StorageError
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.broker")
#: How often due file deletions are looked for: a list check on the loop, a thread only when one is due.
FILE_DELETION_CHECK_S = 0.5


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = int(config["node.id"])  # type: ignore[arg-type]
        self.connections: set[Connection] = set()
        self.servers: list[asyncio.Server] = []
        self.bound: dict[str, tuple[str, int]] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.stopping = asyncio.Event()
        configured = config["log.dirs"]
        names = configured if isinstance(configured, list) else str(configured).split(",")
        log_dirs = [Path(str(d).strip()) for d in names if str(d).strip()]
        self.dynamic_configs = DynamicBrokerConfigs.load(log_dirs[0], self.node_id, config)
        self.config = config = self.dynamic_configs.config()
        default_log_config = LogConfig.from_mapping(dict(resolve_topic_config({}, config)))
        self.logs = LogManager(
            log_dirs,
            default_log_config,
            producer_id_expiration_ms=int(config["producer.id.expiration.ms"]),  # type: ignore[arg-type]
        )
        self.services: Services | None = None
        self.metrics_endpoint: metrics.MetricsEndpoint | None = None

    # ----- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        started = time.monotonic()
        await asyncio.to_thread(self.logs.startup)
        meta = self.logs.ensure_meta_properties(self.node_id)
        cluster = ClusterMetadata(meta.cluster_id, self.node_id, [])
        topics = TopicAdmin(self.config, cluster, self.logs, self.node_id)
        appends = AppendNotifier()
        groups = GroupCoordinator(self.config, cluster, topics, self.logs, self.node_id, appends.notify)
        self.services = Services(
            node_id=self.node_id,
            config=self.config,
            cluster=cluster,
            topics=topics,
            logs=self.logs,
            appends=appends,
            groups=groups,
            producer_ids=ProducerIdManager(self.logs.log_dirs[0]),
            dynamic_configs=self.dynamic_configs,
            fetch_sessions=FetchSessionCache(int(self.config["max.incremental.fetch.session.cache.slots"])),  # type: ignore[arg-type]
        )
        await self._listen()  # bound (the advertised ports are known), not serving yet
        services = self.services
        self.metrics_endpoint = await metrics.start_endpoint(self.config, services, self._connection_count)
        cluster.brokers = {self.node_id: self._own_endpoint()}
        topics.load()
        await groups.start()  # a first start creates __consumer_offsets (in a worker thread)
        for server in self.servers:
            await server.start_serving()
        self._every("log.retention.check.interval.ms", self._retention)
        self._every("log.flush.scheduler.interval.ms", self._flush, fallback_ms=1000)
        self._every("log.flush.offset.checkpoint.interval.ms", self._checkpoint)
        self._every("log.cleaner.backoff.ms", self._compaction)
        self._every("producer.id.expiration.check.interval.ms", self._expire_producers)
        self.tasks.append(asyncio.get_running_loop().create_task(self._close_idle_connections()))
        self.tasks.append(asyncio.get_running_loop().create_task(self._delete_files_when_due()))
        log.info(
            "broker started",
            extra={
                "fields": {
                    "node_id": self.node_id,
                    "cluster_id": meta.cluster_id,
                    "listeners": ",".join(f"{n}://{h}:{p}" for n, (h, p) in self.bound.items()),
                    "log_dirs": ",".join(str(d) for d in self.logs.log_dirs),
                    "topics": len(cluster.topics),
                    "seconds": round(time.monotonic() - started, 3),
                }
            },
        )

    async def _listen(self) -> None:
        assert self.services is not None
        loop = asyncio.get_running_loop()
        max_request = int(self.config["socket.request.max.bytes"])  # type: ignore[arg-type]
        scratch = ReadScratch()  # shared by every connection this loop reads (see framing.py)
        services = self.services
        for endpoint in self.config.listener_endpoints():
            name = endpoint.listener_name

            def factory(name: str = name) -> Connection:
                connection = Connection(services, name, max_request, self.connections.discard, scratch)
                self.connections.add(connection)
                return connection

            server = await loop.create_server(
                factory, endpoint.host or None, endpoint.port, reuse_address=True, start_serving=False
            )
            self.servers.append(server)
            sockname = server.sockets[0].getsockname()
            self.bound[name] = (endpoint.host, int(sockname[1]))
        self._advertise()

    def _advertise(self) -> None:
        assert self.services is not None
        advertised = {e.listener_name: e for e in self.config.advertised_endpoints()}
        for name, (host, port) in self.bound.items():
            endpoint = advertised.get(name)
            advertised_host = (endpoint.host if endpoint else host) or socket.getfqdn()
            advertised_port = endpoint.port if endpoint and endpoint.port else port
            self.services.advertised[name] = [BrokerEndpoint(self.node_id, advertised_host, advertised_port)]

    def _connection_count(self) -> int:
        return len(self.connections)

    def _own_endpoint(self) -> BrokerEndpoint:
        assert self.services is not None
        return next(iter(self.services.advertised.values()))[0]

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        await self.stopping.wait()
        await self.stop()

    async def stop(self) -> None:
        """Graceful shutdown: stop accepting, answer what is in flight, flush and checkpoint the logs."""
        log.info("broker stopping")
        for server in self.servers:
            server.close()
        if self.metrics_endpoint is not None:
            self.metrics_endpoint.close()
        if self.services is not None:
            self.services.appends.wake_all()
            if self.services.groups is not None:
                self.services.groups.stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(c.drain() for c in list(self.connections))), 10)
        for connection in list(self.connections):
            connection.close()
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.services is not None:
            await self.services.topics.drain()  # a topic creation under way finishes its files first
        await asyncio.to_thread(self.logs.shutdown)
        log.info("broker stopped")

    # ----- periodic jobs -------------------------------------------------------------------------------

    def _every(
        self, config_name: str, job: Callable[[], Awaitable[None]], fallback_ms: int = 300_000
    ) -> None:
        try:
            interval_ms = int(self.config[config_name])  # type: ignore[arg-type]
        except KeyError:
            interval_ms = fallback_ms
        interval = max(interval_ms, 10) / 1000

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await job()
                except Exception:
                    log.exception("periodic job %s failed", job.__name__)

        self.tasks.append(asyncio.get_running_loop().create_task(loop()))

    async def _retention(self) -> None:
        if self.services is not None:
            await self.services.topics.finish_deletions()
        self.logs.cleanup_logs()
        job = self.logs.take_file_deletions()
        await asyncio.to_thread(job.run)

    async def _delete_files_when_due(self) -> None:
        """Kafka's delete-logs task: deleted segments and partition directories (and their open files)
        go once their file.delete.delay.ms has passed, not at the next retention check minutes later."""
        while True:
            await asyncio.sleep(FILE_DELETION_CHECK_S)
            job = self.logs.take_file_deletions()
            if not job.empty:
                await asyncio.to_thread(job.run)  # logs its failures itself, never raises

    async def _flush(self) -> None:
        jobs = self.logs.prepare_flushes()
        if jobs:
            await asyncio.to_thread(_run_all, [job for _, job in jobs])
            self.logs.complete_flushes(jobs)

    async def _checkpoint(self) -> None:
        job = self.logs.prepare_checkpoint()
        await asyncio.to_thread(job.run)

    async def _compaction(self) -> None:
        from odradek.storage.cleaner import run_cleaning

        for cleaned_log, plan in self.logs.compaction_plans():
            try:
                result = await asyncio.to_thread(run_cleaning, plan)
            except (OSError, StorageError):
                # Deleted meanwhile (Kafka aborts its cleaning too): nothing to report. Otherwise one
                # partition's failure is logged and the others are still cleaned.
                if self.logs.get_log(*cleaned_log.topic_partition) is cleaned_log:
                    log.exception("compaction of %s failed", cleaned_log.topic_partition)
                continue
            self.logs.complete_compaction(cleaned_log, result)

    async def _expire_producers(self) -> None:
        self.logs.remove_expired_producers()

    async def _close_idle_connections(self) -> None:
        idle_ms = int(self.config["connections.max.idle.ms"])  # type: ignore[arg-type]
        while True:
            await asyncio.sleep(min(max(idle_ms / 4000, 0.05), 30))
            now = time.monotonic()
            for connection in list(self.connections):
                if connection.idle_for(now) * 1000 > idle_ms:
                    log.info("closing idle connection", extra={"fields": connection.describe()})
                    connection.close()


def _run_all(jobs: list[Any]) -> None:
    for job in jobs:
        job.run()


async def serve(config: BrokerConfig) -> None:
    broker = Broker(config)
    await broker.start()
    await broker.run_until_stopped()
