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
import functools
import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.controller.cancelling import cancel_and_wait
from odradek.cluster.dynamic_configs import FILE_NAME, DynamicBrokerConfigs, apply_log_defaults
from odradek.cluster.inter_broker_connection import inter_broker_security
from odradek.cluster.leadership import Leadership, SingleNodeLeadership
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.fetcher_manager import ReplicaFetcherManager
from odradek.cluster.replication.replication_quota import ReplicationQuotas
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.cluster.topics import TopicAdmin
from odradek.cluster.zk_acls import AclChangeListener, ZkAclStore
from odradek.cluster.zk_broker_configs import ZkBrokerConfigs
from odradek.cluster.zk_client_quotas import ZkClientQuotas
from odradek.cluster.zk_producer_ids import ZkProducerIdManager
from odradek.cluster.zk_scram_credentials import ZkScramCredentialStore
from odradek.cluster.zk_topic_configs import TopicConfigSync
from odradek.cluster.zk_topics import ZkTopicAdmin
from odradek.cluster.zookeeper.errors import BrokerIdAlreadyRegisteredError, ZooKeeperError
from odradek.cluster.zookeeper.paths import BROKER_CONFIG, USER_CONFIG
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.cluster.zookeeper_security import zookeeper_security
from odradek.config.broker import BrokerConfig
from odradek.config.catalog_cluster import generate_cluster_id
from odradek.config.topic import resolve_topic_config
from odradek.config.types import ConfigError
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.producer_ids import CorruptProducerIdBlockError, ProducerIdManager
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.coordinator.txn_state_log import TRANSACTION_STATE_TOPIC
from odradek.handlers.configs import reconfigure
from odradek.handlers.delayed_produce import isr_wait
from odradek.handlers.fetch_sessions import FetchSessionCache
from odradek.handlers.services import Services
from odradek.security.acl_store import AclStoreError
from odradek.security.authorizer import authorizer_from_config
from odradek.security.client_quotas import ClientQuotas
from odradek.security.listener_security import ListenerSecurity, listener_security
from odradek.security.quota_entities import QuotaEntity
from odradek.security.quota_store import LocalQuotaStore, QuotaStoreError
from odradek.security.scram_credentials import CredentialError, CredentialStore, ScramCredentialStore
from odradek.security.tls_reload import TlsReloader
from odradek.server import metrics
from odradek.server.acceptor import Acceptor, bind_sockets
from odradek.server.connection import Connection
from odradek.server.connection_quotas import ConnectionQuotas
from odradek.server.console_process import (
    ConsoleOptions,
    ConsoleProcess,
    ConsoleUnavailableError,
    check_console_files,
    check_console_installed,
)
from odradek.server.controlled_shutdown import controlled_shutdown
from odradek.server.delayed import AppendNotifier
from odradek.server.framing import ReadScratch
from odradek.server.memory_pool import memory_pool_for
from odradek.server.replica_fetchers import replica_fetchers
from odradek.server.request_queue import RequestQueue
from odradek.server.storage_work import run_file_deletions, run_storage_work
from odradek.server.zookeeper_member import ZooKeeperMember
from odradek.storage.config import LogConfig
from odradek.storage.errors import StorageError
from odradek.storage.log_dir_lock import LogDirLocks
from odradek.storage.log_manager import LogManager
from odradek.storage.node_id import resolve_node_id

log = logging.getLogger("odradek.broker")


class StartupError(Exception):
    """The broker cannot start; the message is the one line an operator needs to fix it."""


class BrokerReplacedError(StartupError):
    """Running, the broker lost its registration to a live broker with the same id (which took it while
    this one's session was lost): it stopped, in the one line a start refused for that would give."""


class ListenerBindError(Exception):
    """A listener's address cannot be bound: port in use, host unknown, no permission."""


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
        self.quotas = ConnectionQuotas(self._live_config, listener_names)
        self.connections: set[Connection] = set()
        self.acceptors: list[Acceptor] = []
        self.bound: dict[str, tuple[str, int]] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.stopping = asyncio.Event()
        self.started = False
        #: Why the broker stopped by itself, raised once it has (``run_until_stopped``).
        self.failure: StartupError | None = None
        #: Set when a log rolled a segment or was truncated: file work is due (`run_storage_work`).
        self.storage_work_due = asyncio.Event()
        log_dirs = [Path(d.strip()) for d in config.log_dirs if d.strip()]
        # Before anything reads or writes the dirs: a second broker on them stops here, untouched.
        self.log_dir_locks = LogDirLocks.acquire(log_dirs)
        try:
            self.node_id = resolve_node_id(
                log_dirs,
                config.node_id,
                config.broker_id_generation_enable,
                cluster=bool(config.zookeeper_connect),
            )
            if config.zookeeper_connect:  # a cluster member's dynamic configs are in ZooKeeper
                self.dynamic_configs = DynamicBrokerConfigs(log_dirs[0] / FILE_NAME, self.node_id, config)
            else:
                self.dynamic_configs = DynamicBrokerConfigs.load(log_dirs[0], self.node_id, config)
            self.config = config = self.dynamic_configs.config()
            default_log_config = LogConfig.from_mapping(dict(resolve_topic_config({}, config)))
            self.logs = LogManager(
                log_dirs,
                default_log_config,
                producer_id_expiration_ms=config.producer_id_expiration_ms,
                # In a cluster the high watermark is the replica manager's, not every append's.
                single_node=not config.zookeeper_connect,
                on_work_due=self.storage_work_due.set,
            )
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
            zk_security = (
                zookeeper_security(config, system_properties or {}) if config.zookeeper_connect else None
            )
        except BaseException:
            self.log_dir_locks.release()
            raise
        self.logs_loaded = False  # the clean-shutdown marker is only written for logs fully loaded
        self.metrics_endpoint: metrics.MetricsEndpoint | None = None
        self.console: ConsoleProcess | None = None
        #: Set with zookeeper.connect: this broker's session, registration and controller elector.
        self.member = (
            ZooKeeperMember(
                config, self.node_id, self.inter_broker_security, zk_security, on_replaced=self._replaced
            )
            if zk_security is not None
            else None
        )
        self.fetchers: ReplicaFetcherManager | None = None

    # ----- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        started = time.monotonic()
        member = self.member
        # As Kafka: meta.properties is checked against the broker and cluster ids before any log is
        # loaded, so a log dir of another broker or cluster is refused untouched (recovery writes).
        if member is None:
            meta = self.logs.ensure_meta_properties(self.node_id, self.config.cluster_id)
        else:
            await member.connect()
            # the cluster's id is /cluster/id; meta.properties must agree
            cluster_id = await member.cluster_id(self.config.cluster_id or generate_cluster_id())
            if self.config.cluster_id and self.config.cluster_id != cluster_id:
                raise ConfigError(
                    f"cluster.id {self.config.cluster_id} is not this cluster's id {cluster_id} "
                    "(ZooKeeper's /cluster/id): remove it or set that one",
                    "cluster.id",
                )
            meta = self.logs.ensure_meta_properties(self.node_id, cluster_id)
        await asyncio.to_thread(self.logs.startup)
        self.logs_loaded = True
        zk_broker_configs: ZkBrokerConfigs | None = None
        replicas: ReplicaManager | None = None
        leadership: Leadership
        if member is None:
            cluster = ClusterMetadata(meta.cluster_id, self.node_id, [])
            topics = TopicAdmin(self.config, cluster, self.logs, self.node_id)
            leadership = SingleNodeLeadership(cluster, self.node_id)
        else:
            assert member.zk is not None
            # the dynamic broker configs /config/brokers holds, before anything reads the configuration
            zk_broker_configs = ZkBrokerConfigs(member.zk, self.node_id, self.dynamic_configs)
            self.config = await zk_broker_configs.load()
            apply_log_defaults(self.logs, self.config)
            cluster = ClusterMetadata(meta.cluster_id, -1, [])  # the controller is not known yet
            topics = ZkTopicAdmin(self.config, cluster, self.logs, self.node_id)
            assert member.zk is not None
            topics.attach(member.zk)
            # what this broker leads, at which epoch: the coordinators append as leaders too
            leadership = replicas = ReplicaManager(
                self.node_id, cluster, self.logs, truncation_checkpoints=self.truncation_checkpoints
            )
        appends = AppendNotifier()
        regexes = RegexMatcher()  # one worker for the regexes clients send, shared by both users
        groups = GroupCoordinator(
            self.config,
            cluster,
            topics,
            self.logs,
            self.node_id,
            appends.notify,
            leadership=leadership,
            regexes=regexes,
        )
        producer_ids: ProducerIdManager | ZkProducerIdManager
        credentials: CredentialStore
        if member is None:
            producer_ids = ProducerIdManager(self.logs.log_dirs[0])
            credentials = ScramCredentialStore.load(self.logs.log_dirs[0])
            authorizer = authorizer_from_config(self.config, self.logs.log_dirs[0])
        else:
            assert member.zk is not None
            producer_ids = ZkProducerIdManager(member.zk, self.node_id)
            # In a cluster, credentials and ACLs are ZooKeeper's (/config/users, /kafka-acl), shared
            credentials = await asyncio.to_thread(ZkScramCredentialStore(member.zk).load)
            authorizer = await asyncio.to_thread(
                authorizer_from_config, self.config, self.logs.log_dirs[0], ZkAclStore(member.zk)
            )
        self.services = Services(
            node_id=self.node_id,
            config=self.config,
            cluster=cluster,
            topics=topics,
            logs=self.logs,
            appends=appends,
            groups=groups,
            producer_ids=producer_ids,
            leadership=leadership,
            dynamic_configs=self.dynamic_configs,
            zk_broker_configs=zk_broker_configs,
            fetch_sessions=FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots),
            scram_credentials=credentials,
            authorizer=authorizer,
            client_quotas=self._client_quotas(member is None),
            replication_quotas=ReplicationQuotas.of(self.node_id, self._live_config),
            regexes=regexes,
        )
        self.quotas.ip_throttle = self.services.client_quotas.connection_throttle_ms
        if member is not None:  # every quota read, and changes written there, before a client is served
            assert member.zk is not None
            await ZkClientQuotas(member.zk, self.services.client_quotas).start()
        transactions = TransactionCoordinator(
            self.config,
            cluster,
            topics,
            self.logs,
            self.node_id,
            self.services.producer_ids,
            groups,
            appends.notify,
            inter_broker_security=self.inter_broker_security,
            marker_replicated=isr_wait(self.services),
            leadership=leadership,
        )
        self.services.transactions = transactions
        await self._listen()  # bound (the advertised ports are known), not serving yet
        services = self.services
        if zk_broker_configs is not None:
            zk_broker_configs.apply = functools.partial(reconfigure, services)
        try:
            self.metrics_endpoint = await metrics.start_endpoint(
                self.config, services, self._connection_count
            )
        except OSError as error:
            raise _bind_error(
                "metrics.host, metrics.port", self.config.metrics_host, self.config.metrics_port or 0, error
            ) from None
        if member is None:
            cluster.brokers = {self.node_id: self._own_endpoint()}
        topics.load()
        await groups.start()  # a first start creates __consumer_offsets (in a worker thread)
        await transactions.start(groups.settings.single_node)  # and __transaction_state, then replays it
        if member is None or replicas is None:
            self._serve()
        elif not await self._join_cluster(member, services, groups, replicas):  # serves once registered
            return  # stopped while waiting to register: nothing serves, nothing more to start
        if self.config.console_port is not None:
            host, port = next(iter(self.bound.values()))
            options = ConsoleOptions(
                port=self.config.console_port,
                host=self.config.console_host,
                allowed_hosts=tuple(self.config.console_allowed_hosts),
                basic_auth_file=self.config.console_basic_auth_file,
                command_config=self.config.console_command_config,
            )
            self.console = ConsoleProcess(options, f"{host or '127.0.0.1'}:{port}")
            self.console.start()
        self._every("log.retention.check.interval.ms", self._retention)
        self._every("log.flush.scheduler.interval.ms", self._flush, fallback_ms=1000)
        self._every("log.flush.offset.checkpoint.interval.ms", self._checkpoint)
        if member is not None:  # a single node's high watermark is its log end, checkpointed just above
            self._every("replica.high.watermark.checkpoint.interval.ms", self._checkpoint_high_watermarks)
        if self.config.log_cleaner_enable:  # as Kafka: when false no cleaner runs, nothing is compacted
            self._every("log.cleaner.backoff.ms", self._compaction)
        self._every("producer.id.expiration.check.interval.ms", self._expire_producers)
        if self.config.connections_max_idle_ms >= 0:  # as Kafka: a negative value turns idle expiry off
            self.tasks.append(asyncio.get_running_loop().create_task(self._close_idle_connections()))
        self.tasks.append(asyncio.get_running_loop().create_task(run_file_deletions(self.logs)))
        self.tasks.append(
            asyncio.get_running_loop().create_task(
                run_storage_work(self.logs.flushes, self.truncation_checkpoints, self.storage_work_due)
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

    def _client_quotas(self, single_node: bool) -> ClientQuotas:
        """Client quotas over Kafka's windows; a single node keeps them in its log dir (a cluster
        member's are in ZooKeeper: zk_client_quotas)."""
        config = self.config
        quotas = ClientQuotas(config.quota_window_num, config.quota_window_size_seconds)
        if single_node:
            store = LocalQuotaStore(self.logs.log_dirs[0])
            for entity, values in store.load().items():
                quotas.apply(entity, values)

            # One write at a time (the store's own order), the others waiting here on the loop: each
            # waiting in a worker thread held it, and enough of them held every one the broker has.
            turn = asyncio.Lock()

            async def persist(entity: QuotaEntity, values: Mapping[str, float]) -> None:
                async with turn:
                    await asyncio.to_thread(store.write, entity, values)
                quotas.apply(entity, values)

            quotas.persist = persist
        return quotas

    async def _join_cluster(
        self,
        member: ZooKeeperMember,
        services: Services,
        groups: GroupCoordinator,
        replicas: ReplicaManager,
    ) -> bool:
        """Register in ZooKeeper, serve, then run for controller (the controller sends LeaderAndIsr
        and UpdateMetadata to the endpoints registered; its channel reconnects until they listen).
        False: stopped while waiting to register, nothing served."""
        replicas.leaders.replica_lag_time_max_ms = self.config.replica_lag_time_max_ms
        replicas.leaders.on_high_watermark = services.appends.wake
        replicas.leaders.min_insync_replicas = services.topics.min_insync_replicas
        replicas.leaders.replica_selector_class = self.config.replica_selector_class or None
        services.appends.on_append = replicas.leaders.on_append
        # The coordinators' writes are acks=all appends: refused under min.insync.replicas.
        groups.runtime.under_min_isr = functools.partial(replicas.under_min_isr, OFFSETS_TOPIC)
        groups.runtime.replicated = isr_wait(services)
        if services.transactions is not None:
            state_log = services.transactions.state_log
            state_log.under_min_isr = functools.partial(replicas.under_min_isr, TRANSACTION_STATE_TOPIC)
            # ... and applied to the coordinator's memory once the ISR holds them (Kafka's acks=-1).
            services.transactions.leader_since_epoch = functools.partial(
                replicas.leader_since_epoch, TRANSACTION_STATE_TOPIC
            )
            state_log.replicated = isr_wait(services)
        self.fetchers = replica_fetchers(
            self.config, self._live_config, services, self.logs, replicas, self.inter_broker_security
        )
        replicas.fetchers = self.fetchers
        self.tasks.append(asyncio.get_running_loop().create_task(replicas.leaders.run_isr_shrinks()))
        assert member.zk is not None
        topic_configs = TopicConfigSync(member.zk, services.cluster, self.logs)
        if services.zk_broker_configs is not None:
            topic_configs.follow(BROKER_CONFIG, services.zk_broker_configs.on_change)

        def leadership_changed(_led: list[tuple[str, int]], _stopped: list[tuple[str, int]]) -> None:
            topic_configs.apply_known()  # new replicas' logs take their topic's configs
            # The group coordinators live where __consumer_offsets partitions are led, and move with them.
            groups.refresh_leadership()
            # So does the transaction coordinator, with __transaction_state.
            if services.transactions is not None:
                services.transactions.leadership_changed()

        replicas.on_leadership_change = leadership_changed
        replicas.on_metadata_update = topic_configs.apply_known
        loop = asyncio.get_running_loop()
        if isinstance(services.scram_credentials, ZkScramCredentialStore):
            topic_configs.follow(USER_CONFIG, services.scram_credentials.user_changed)
        topic_configs.start(loop)
        authorizer = services.authorizer
        if authorizer is not None and isinstance(authorizer.store, ZkAclStore):
            AclChangeListener(member.zk, authorizer.store, authorizer).start(loop)
        services.join_zookeeper_cluster(replicas, self.inter_broker_security)
        if not await member.register(services.advertised, replicas):
            return False
        # As Kafka, only a registered broker processes requests: one whose id a live broker holds
        # has exited above, before any client reached it (its listeners were bound, not listening).
        self._serve()
        services.controller = await member.start_controller()
        topic_configs.on_change = services.controller.topic_configs_changed
        return True

    def _serve(self) -> None:
        """Listen and accept on every bound listener."""
        for acceptor in self.acceptors:
            acceptor.start()

    async def _listen(self) -> None:
        """Bind every listener (serving starts in `start`), under the connection quotas and memory pool."""
        assert self.services is not None
        config = self.config
        max_request = config.socket_request_max_bytes
        scratch = ReadScratch()  # shared by every connection this loop reads (see framing.py)
        pool, quotas, services, request_queue = (
            self.memory_pool,
            self.quotas,
            self.services,
            self.request_queue,
        )
        for endpoint in config.listener_endpoints():
            name = endpoint.listener_name
            security = self.listener_security.get(name)

            def factory(
                release: Callable[[Connection], None],
                name: str = name,
                security: ListenerSecurity | None = security,
            ) -> Connection:
                def on_close(connection: Connection) -> None:
                    self.connections.discard(connection)
                    release(connection)

                connection = Connection(
                    services, name, max_request, on_close, scratch, pool, security, request_queue
                )
                self.connections.add(connection)
                if quotas.is_protected(services.config, name) and quotas.over_broker_limit():
                    self._close_least_recently_used(name)
                return connection

            try:
                sockets = bind_sockets(endpoint.host, endpoint.port, config.socket_receive_buffer_bytes)
            except OSError as error:
                raise _bind_error(f"listener {name}", endpoint.host, endpoint.port, error) from None
            for server_socket in sockets:
                backlog = config.socket_listen_backlog_size
                tls = security.tls.context if security is not None and security.tls is not None else None
                self.acceptors.append(
                    Acceptor(
                        name,
                        server_socket,
                        backlog,
                        quotas,
                        factory,
                        tls,
                        send_buffer_bytes=config.socket_send_buffer_bytes,
                    )
                )
            self.bound[name] = (endpoint.host, int(sockets[0].getsockname()[1]))
        # also refuses stores for a non-TLS listener; the inter-broker client's context is reloaded too
        services.tls = TlsReloader(self.acceptors, config, self.inter_broker_security)
        self._advertise()

    def _live_config(self) -> BrokerConfig:
        """The configuration as AlterConfigs last left it."""
        return self.services.config if self.services is not None else self.config

    def _close_least_recently_used(self, protected_listener: str) -> None:
        """Kafka's answer to an inter-broker connection taken over max.connections: the connection of
        another listener that was active least recently makes room."""
        others = [c for c in self.connections if c.listener != protected_listener and not c.closed]
        if others:
            victim = min(others, key=lambda c: c.last_active)
            log.info(
                "closing the least recently used connection for max.connections",
                extra={"fields": victim.describe()},
            )
            victim.close()

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

    def _own_endpoint(self) -> BrokerEndpoint:
        assert self.services is not None
        return next(iter(self.services.advertised.values()))[0]

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
        if self.member is not None:
            self.member.stop_waiting()
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
        member, services = self.member, self.services
        if (
            member is not None
            and services is not None
            and member.replicas is not None
            and member.registered
            and self.failure is None  # the controller knows another broker under this id
            and self.config.controlled_shutdown_enable
        ):
            # As Kafka: leaderships move away while this broker still serves, then it stops.
            member.replicas.leaving = True
            await controlled_shutdown(
                self.config,
                services.cluster,
                self.node_id,
                member.broker_epoch,
                member.inter_broker_security,
            )
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
        if self.services is not None:
            self.services.appends.wake_all()
            if self.services.groups is not None:
                self.services.groups.stop()
            if self.services.transactions is not None:
                self.services.transactions.stop()
            if self.services.txn_verifier is not None:
                self.services.txn_verifier.close()
            self.services.regexes.close()
            # Before the drain: queued record work is dropped and the jobs under way stop at their next
            # checkpoint, so that no request waits for a rewrite to end; the requests that needed them
            # close their connections unanswered, as Kafka drops the requests it has not handled.
            self.services.record_workers.shutdown()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(c.drain() for c in list(self.connections))), 10)
        for connection in list(self.connections):
            connection.close()
        await asyncio.gather(*(cancel_and_wait(task) for task in self.tasks))
        if self.fetchers is not None:
            await self.fetchers.shutdown()  # before the logs close: no append may come after
        if self.member is not None and self.member.replicas is not None:
            await self.member.replicas.leaders.close()
        if self.services is not None:
            await self.services.topics.drain()  # a topic creation under way finishes its files first
        if self.member is not None:
            await self.member.close()  # the controller stops, then the session ends
        if self.logs_loaded:
            await asyncio.to_thread(self.logs.shutdown)
        self.log_dir_locks.release()

    # ----- periodic jobs -------------------------------------------------------------------------------

    def _every(
        self, config_name: str, job: Callable[[], Awaitable[None]], fallback_ms: int = 300_000
    ) -> None:
        async def loop() -> None:
            while True:
                # read each time: a dynamic interval (log.cleaner.backoff.ms) applies from the next wait
                value = self._live_config()[config_name]  # the caller names the interval setting
                interval_ms = value if isinstance(value, int) else fallback_ms
                await asyncio.sleep(max(interval_ms, 10) / 1000)
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

    async def _flush(self) -> None:
        jobs = self.logs.flushes.prepare_flushes()
        if jobs:
            await asyncio.to_thread(_run_all, [job for _, job in jobs])
            self.logs.flushes.complete_flushes(jobs)

    async def _checkpoint(self) -> None:
        job = self.logs.flushes.prepare_checkpoint()
        await asyncio.to_thread(job.run)

    async def _checkpoint_high_watermarks(self) -> None:
        job = self.logs.flushes.prepare_high_watermark_checkpoint()
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
        """Kafka's idle expiry: a connection whose client has sent nothing and taken none of its answers
        for connections.max.idle.ms is closed, answers pending or not (see Connection.idle_for)."""
        idle_ms = self.config.connections_max_idle_ms
        while True:
            await asyncio.sleep(min(max(idle_ms / 4000, 0.05), 30))
            now = time.monotonic()
            for connection in list(self.connections):
                if connection.idle_for(now) * 1000 > idle_ms:
                    connection.expire(idle_ms)


def _run_all(jobs: list[Any]) -> None:
    for job in jobs:
        job.run()


def _bind_error(what: str, host: str, port: int, error: OSError) -> ListenerBindError:
    # asyncio's own message repeats the address in a tuple; the operator needs which setting and why.
    if isinstance(error, socket.gaierror) or not error.errno:
        reason = error.strerror or str(error)
    else:
        reason = os.strerror(error.errno)
    return ListenerBindError(f"Socket server failed to bind to {host or '0.0.0.0'}:{port} ({what}): {reason}")


#: What stops a start-up with a clear message of its own: a bad setting, a log dir that cannot be used
#: (locked, unwritable, another broker's or another cluster's), an unusable listener address, a corrupt
#: producer-id block, unusable SCRAM credentials, ACLs or client quotas, a console asked for but not
#: installed, ZooKeeper.
_STARTUP_FAILURES = (
    ConfigError,
    StorageError,
    ListenerBindError,
    CorruptProducerIdBlockError,
    ConsoleUnavailableError,
    CredentialError,
    AclStoreError,
    QuotaStoreError,
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
