"""The broker process: loads the logs, serves the listeners, runs the periodic jobs, shuts down cleanly.

One asyncio loop owns all broker state. Slow file work (recovery at start-up, fsync, retention deletes,
compaction, checkpoints, new partitions) runs in worker threads via `asyncio.to_thread`, with storage's
prepare/run/complete split keeping every state change on the loop. The listeners serve once the topics
are loaded and, on a first start, `__consumer_offsets` is created; a cluster member's once it is also
registered in ZooKeeper (a broker id a live broker holds stops the start-up before anything serves).

Start-up takes the `.lock` of every log dir before anything else touches them, then settles the node id
(configured, or kept in meta.properties). A broker that cannot start raises `StartupError`, one line
naming the problem, having released what it took; `odradek broker` prints it and exits non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Mapping
from pathlib import Path

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.inter_broker_connection import inter_broker_security
from odradek.cluster.metadata import BrokerEndpoint, LiveBroker
from odradek.cluster.metadata.client_quotas import QuotaStoreError
from odradek.cluster.metadata.entity_configs import EntityConfigStoreError
from odradek.cluster.metadata.producer_ids import CorruptProducerIdBlockError
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError, ZooKeeperError
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.cluster.zookeeper_security import zookeeper_security
from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.handlers._common.services import Services
from odradek.security.acl_store import AclStoreError
from odradek.security.delegation_tokens import TokenStoreError
from odradek.security.listener_security import ListenerSecurity, listener_security
from odradek.security.scram_credentials import CredentialError
from odradek.server import metrics
from odradek.server.connection_quotas import ConnectionQuotas
from odradek.server.console_process import (
    ConsoleOptions,
    ConsoleProcess,
    ConsoleUnavailableError,
    check_console_files,
    check_console_installed,
)
from odradek.server.jobs import StorageJobs, close_idle_connections, file_work_tasks
from odradek.server.listeners import ListenerBindError, Listeners, bind_error
from odradek.server.log_dirs import open_storage
from odradek.server.membership import ClusterMembership, Membership, SingleNode
from odradek.server.memory_pool import memory_pool_for
from odradek.server.request_queue import RequestQueue
from odradek.server.wiring import BrokerParts, Foundation
from odradek.server.zookeeper_member import ZooKeeperMember
from odradek.storage.errors import StorageError
from odradek.storage.log_dir_lock import LogDirLocks
from odradek.tasks.cancelling import cancel_and_wait

log = logging.getLogger("odradek.broker")


class StartupError(Exception):
    """The broker cannot start; the message is the one line an operator needs to fix it."""


class BrokerReplacedError(StartupError):
    """Running, the broker lost its registration to a live broker with the same id (which took it while
    this one's session was lost): it stopped, in the one line a start refused for that would give."""


class Broker:
    def __init__(self, config: BrokerConfig, system_properties: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.services: Services | None = None
        # First, so that a limit that cannot be used stops the broker before it touches anything.
        self.memory_pool = memory_pool_for(config)
        self.request_queue = RequestQueue(config.queued_max_requests)
        if config.console_port is not None:
            check_console_installed()
            check_console_files(config.console_basic_auth_file, config.console_command_config)
        listener_names = [e.listener_name for e in config.listener_endpoints()]
        self.quotas = ConnectionQuotas(self._live_config, listener_names, ip_throttle=self._ip_throttle_ms)
        self.tasks: list[asyncio.Task[None]] = []
        self.stopping = asyncio.Event()
        self.started = False
        #: Why the broker stopped by itself, raised once it has (``run_until_stopped``).
        self.failure: StartupError | None = None
        #: Set when a log rolled a segment or was truncated: file work is due (`run_storage_work`).
        self.storage_work_due = asyncio.Event()
        #: Set (from any thread) when a log dir failed: `handle_log_dir_failures` takes it offline.
        self.log_dir_failure_due = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        log_dirs = [Path(d.strip()) for d in config.log_dirs if d.strip()]
        # Before anything reads or writes the dirs: a second broker on them stops here, untouched.
        self.log_dir_locks = LogDirLocks.acquire(log_dirs)
        # a dir that could not be used starts offline (as Kafka), if another can be: not read here
        live_dirs = [d for d in log_dirs if d not in self.log_dir_locks.offline]
        # the mode is read once: a cluster member's dynamic configs are in ZooKeeper, its log dirs
        # hold what the controller assigned (no stray-log rule of a single node's topic store)
        cluster_member = bool(config.zookeeper_connect)
        try:
            storage = open_storage(
                config,
                log_dirs,
                live_dirs,
                cluster_member=cluster_member,
                on_work_due=self.storage_work_due.set,
                on_log_dir_failure=self._log_dir_failed,
            )
            self.node_id, self.dynamic_configs, self.logs = (
                storage.node_id,
                storage.dynamic_configs,
                storage.logs,
            )
            self.config = config = storage.config
            for offline_dir, error in self.log_dir_locks.offline.items():
                self.logs.log_dir_failed(offline_dir, error)  # told to the controller once started
        except BaseException:
            self.log_dir_locks.release()
            raise
        #: The checkpoints truncations make due, and the wait for them of what appends after one.
        self.truncation_checkpoints = TruncationCheckpoints(self.logs.flushes)
        # Every listener's TLS and SASL settings, checked before anything is loaded or bound.
        try:
            self.listener_security: dict[str, ListenerSecurity] = listener_security(config)
            # how this broker connects to the others: their listener's TLS and SASL, checked now too
            self.inter_broker_security = inter_broker_security(config)
            # and to ZooKeeper: TLS, its SASL login (a JAAS file from the system properties), ACLs
            zk_security = zookeeper_security(config, system_properties or {}) if cluster_member else None
        except BaseException:
            self.log_dir_locks.release()
            raise
        self.listeners = Listeners(self.listener_security, self.quotas, self.memory_pool, self.request_queue)
        self.connections, self.acceptors, self.bound = (
            self.listeners.connections,
            self.listeners.acceptors,
            self.listeners.bound,
        )
        self.logs_loaded = False  # the clean-shutdown marker is only written for logs fully loaded
        self.metrics_endpoint: metrics.MetricsEndpoint | None = None
        self.console: ConsoleProcess | None = None
        #: Set with zookeeper.connect: this broker's session, registration and controller elector.
        self.member: ZooKeeperMember | None = None
        #: A single node, or a cluster member: what start-up and shutdown do differently.
        self.membership: Membership = SingleNode()
        if zk_security is not None:
            self.member = ZooKeeperMember(
                config, self.node_id, self.inter_broker_security, zk_security, on_replaced=self._replaced
            )
            self.membership = ClusterMembership(self.member)
        #: What `server/wiring.py` built, once the logs are loaded.
        self.parts: BrokerParts | None = None

    # ----- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        started = time.monotonic()
        self._loop = asyncio.get_running_loop()
        membership = self.membership
        meta = await membership.meta_properties(self.logs, self.node_id, self.config)
        await membership.load_logs(self.logs, self.dynamic_configs)
        self.logs_loaded = True
        base = Foundation(
            self.config,
            self.node_id,
            meta.cluster_id,
            self.logs,
            self.dynamic_configs,
            self.truncation_checkpoints,
            self.inter_broker_security,
            self._live_config,
        )
        parts = await membership.build(base)
        self.config = parts.config
        self.services = parts.services
        self.parts = parts
        cluster, topics, replicas = parts.mode.cluster, parts.mode.topics, parts.mode.replicas
        groups, transactions, share_states = parts.groups, parts.transactions, parts.share_states
        tokens_enabled = parts.tokens_enabled
        self._listen()  # bound (the advertised ports are known), not serving yet
        services = self.services
        try:
            self.metrics_endpoint = await metrics.start_endpoint(
                self.config, services, self._connection_count
            )
        except OSError as error:
            raise bind_error(
                "metrics.host, metrics.port", self.config.metrics_host, self.config.metrics_port or 0, error
            ) from None
        membership.advertise(cluster, self._own_broker())
        topics.load()
        await groups.start()  # a first start creates __consumer_offsets (in a worker thread)
        await transactions.start()  # and __transaction_state, then replays it
        await share_states.start()  # __share_group_state is created on first use, as Kafka 4.x
        if not await membership.join(parts, base, self._serve, self.tasks):  # a member once registered
            return  # stopped while waiting to register: nothing serves, nothing more to start
        if self.config.console_port is not None:
            host, port = next(iter(self.bound.values()))
            metrics_url = metrics.endpoint_url(self.config, self.metrics_endpoint)
            self.console = ConsoleProcess(
                ConsoleOptions.of(self.config, metrics_url), f"{host or '127.0.0.1'}:{port}"
            )
            self.console.start()
        jobs = StorageJobs(
            self.logs,
            self._live_config,
            topics,
            services.delegation_tokens,
            checkpoint_high_watermarks=membership.checkpoint_high_watermarks,
        )
        self.tasks.extend(jobs.start(self.config, tokens_enabled))
        if self.config.connections_max_idle_ms >= 0:  # as Kafka: a negative value turns idle expiry off
            idle_ms = self.config.connections_max_idle_ms
            self.tasks.append(
                asyncio.get_running_loop().create_task(close_idle_connections(self.connections, idle_ms))
            )
        self.tasks.extend(
            file_work_tasks(
                self.logs,
                replicas,
                self.truncation_checkpoints,
                storage_work_due=self.storage_work_due,
                log_dir_failure_due=self.log_dir_failure_due,
                notify_controller=membership.log_dir_event_sender(),
                alter_log_dirs_quota=services.replication_quotas.alter_log_dirs,
            )
        )
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
        self.started = True

    def _log_dir_failed(self, _log_dir: Path) -> None:
        """Storage's report of a failed log dir, maybe from a worker thread: wake the handling task."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.log_dir_failure_due.set)

    def _serve(self) -> None:
        self.listeners.serve()

    def _listen(self) -> None:
        """Bind every listener (serving starts in `start`): the advertised ports are known."""
        assert self.services is not None
        self.listeners.bind(self.config, self.services)  # its TLS acceptors registered with services.tls
        self._advertise()

    def _ip_throttle_ms(self, address: str, now_ms: int) -> int:
        """The client quotas' check of `address`'s connection_creation_rate (none before they are built)."""
        services = self.services
        return services.client_quotas.connection_throttle_ms(address, now_ms) if services is not None else 0

    def _live_config(self) -> BrokerConfig:
        """The configuration as AlterConfigs last left it."""
        return self.services.config if self.services is not None else self.config

    def _advertise(self) -> None:
        assert self.services is not None
        advertised = {e.listener_name: e for e in self.config.advertised_endpoints()}
        for name, (host, port) in self.bound.items():
            endpoint = advertised.get(name)
            advertised_host = (endpoint.host if endpoint else host) or socket.getfqdn()
            advertised_port = endpoint.port if endpoint and endpoint.port else port
            self.services.advertised[name] = [
                BrokerEndpoint(self.node_id, advertised_host, advertised_port, self.config.broker_rack)
            ]

    def _connection_count(self) -> int:
        return len(self.connections)

    def _own_broker(self) -> LiveBroker:  # its advertised endpoint on each listener
        assert self.services is not None
        endpoints = {name: ends[0] for name, ends in self.services.advertised.items()}
        return LiveBroker(self.node_id, endpoints, self.config.broker_rack)

    def catch_stop_signals(self) -> None:
        """SIGTERM and SIGINT stop the broker gracefully, also when they come during its start: a cluster
        member serves (and is known to clients and the controller) before its start ends, so the start
        completes, bounded by its own timeouts, then the broker stops as usual (with a controlled
        shutdown); but a wait for another session's registration of its id to go ends at once, and the
        start with it (nothing serves before the registration). A second one during the start exits at
        once."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._stop_requested, sig)

    def _stop_requested(self, sig: signal.Signals) -> None:
        if not self.started:
            if self.stopping.is_set():
                log.warning(f"{sig.name} again during start-up: exiting now")
                os._exit(128 + sig)
            log.info(f"{sig.name} during start-up: stopping once started ({sig.name} again exits now)")
        self.membership.stop_waiting()
        self.stopping.set()

    def _replaced(self, error: BrokerIdAlreadyRegisteredError) -> None:
        """``ZooKeeperMember``: a live broker holds this broker's id now; stop, and say so once stopped."""
        self.failure = BrokerReplacedError(str(error))
        self.stopping.set()

    async def run_until_stopped(self) -> None:
        """Serve until a stop signal, or until the broker must stop by itself (raised then)."""
        await self.stopping.wait()
        await self.stop()
        if self.failure is not None:
            raise self.failure

    async def stop(self) -> None:
        """Graceful shutdown: stop accepting, answer what is in flight, flush and checkpoint the logs."""
        log.info("broker stopping")
        if self.services is not None:
            await self.membership.leave(self.config, self.services.cluster, replaced=self.failure is not None)
        await self.close()
        log.info("broker stopped")

    async def close(self) -> None:
        """Release everything the broker holds (also after a failed start), the log dirs' locks last."""
        for acceptor in self.acceptors:
            acceptor.close()
        # before the coordinators stop: a request queued meanwhile would get NOT_COORDINATOR from a
        # broker that still leads their partitions (Kafka stops processing requests first)
        for connection in list(self.connections):
            connection.stop_serving()
        if self.console is not None:
            await asyncio.to_thread(self.console.stop)
        if self.metrics_endpoint is not None:
            self.metrics_endpoint.close()
        if self.parts is not None:
            self.parts.stop()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(c.drain() for c in list(self.connections))), 10)
        for connection in list(self.connections):
            connection.close()
        await asyncio.gather(*(cancel_and_wait(task) for task in self.tasks))
        await self.membership.stop_replication()  # before the logs close: no append may come after
        if self.services is not None:
            await self.services.topics.drain()  # a topic creation under way finishes its files first
        await self.membership.close()  # a member's controller stops, then its session ends
        if self.logs_loaded:
            await asyncio.to_thread(self.logs.shutdown)
        self.log_dir_locks.release()


#: What stops a start-up with a clear message of its own: a bad setting, a log dir that cannot be used
#: (locked, unwritable, another broker's or another cluster's), an unusable listener address, a corrupt
#: producer-id block, unusable SCRAM credentials, delegation tokens, ACLs, client quotas, client
#: metrics subscriptions or GROUP configs, a console asked for but not installed, ZooKeeper.
_STARTUP_FAILURES = (
    ConfigError,
    StorageError,
    ListenerBindError,
    CorruptProducerIdBlockError,
    ConsoleUnavailableError,
    CredentialError,
    AclStoreError,
    QuotaStoreError,
    TokenStoreError,
    EntityConfigStoreError,
    ZooKeeperError,  # ZooKeeper unreachable in time, broker id already registered
    # /cluster/id written by something else than Kafka's tools, or a broker config value that is not a
    # string (Kafka stops there too; a broker config znode that is no JSON object reads as no overrides)
    MalformedZnodeError,
)


async def serve(config: BrokerConfig, system_properties: Mapping[str, str] | None = None) -> None:
    """Run a broker until SIGTERM/SIGINT; raises StartupError if it cannot start. `system_properties`
    are the JVM properties a Kafka broker would have (config/system_properties.py)."""
    try:
        broker = Broker(config, system_properties)
    except _STARTUP_FAILURES as error:
        raise StartupError(str(error)) from error
    broker.catch_stop_signals()
    try:
        await broker.start()
    except BaseException as error:
        await broker.close()
        if isinstance(error, _STARTUP_FAILURES):
            raise StartupError(str(error)) from error
        raise
    await broker.run_until_stopped()
