"""What a broker does differently as a single node and as a member of a ZooKeeper cluster, from its
start to its stop: which cluster id its log dirs carry, what `server/wiring.py` builds, how it comes
to serve (a single node at once; a member once registered, with replication, the change
notifications it follows and its controller elector), and how it leaves. The broker picks one at
construction and asks it at each of those points, so its own start-up has no mode branches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

from odradek.cluster.dynamic_configs import DynamicBrokerConfigs, apply_log_defaults
from odradek.cluster.metadata import ClusterMetadata, LiveBroker
from odradek.cluster.metadata.acls import AclChangeListener
from odradek.cluster.metadata.broker_configs import ZkBrokerConfigs
from odradek.cluster.metadata.delegation_tokens import TokenChangeListener
from odradek.cluster.replication.fetcher_manager import ReplicaFetcherManager
from odradek.cluster.zookeeper.paths import BROKER_CONFIG, USER_CONFIG
from odradek.config.broker import BrokerConfig
from odradek.config.catalog_cluster import generate_cluster_id
from odradek.config.types import ConfigError
from odradek.server.controlled_shutdown import controlled_shutdown
from odradek.server.wiring import BrokerParts, Foundation, build_cluster_member, build_single_node
from odradek.server.zookeeper_member import ZooKeeperMember
from odradek.storage.checkpoints import MetaProperties
from odradek.storage.log_manager import LogManager


class Membership(Protocol):
    """A broker's mode, asked by `server/broker.py` at each step of its start and stop."""

    #: A cluster member checkpoints its followers' high watermarks on their own interval; a single
    #: node's high watermark is its log end, which the recovery checkpoint holds.
    checkpoint_high_watermarks: bool

    async def meta_properties(self, logs: LogManager, node_id: int, config: BrokerConfig) -> MetaProperties:
        """The log dirs' meta.properties, checked against the broker and cluster ids before any log is
        loaded (as Kafka: a log dir of another broker or cluster is refused untouched)."""
        ...

    async def load_logs(self, logs: LogManager, dynamic_configs: DynamicBrokerConfigs) -> None:
        """After meta.properties: load every log (in a worker thread), a cluster member's once the
        dynamic broker configs in ZooKeeper are given to the log manager, so that they act on the load
        (as Kafka reads them before its LogManager starts)."""
        ...

    async def build(self, base: Foundation) -> BrokerParts: ...

    def advertise(self, cluster: ClusterMetadata, broker: LiveBroker) -> None:
        """The bound listeners are known (`broker`: this one, with its endpoint on each): the brokers a
        single node names are itself."""
        ...

    async def join(
        self, parts: BrokerParts, base: Foundation, serve: Callable[[], None], tasks: list[asyncio.Task[None]]
    ) -> bool:
        """Come to serve (`serve`); False: stopped before, nothing served, nothing more to start."""
        ...

    def log_dir_event_sender(self) -> Callable[[], Awaitable[None]] | None:
        """How a failed log dir is told to the controller; None: there is none."""
        ...

    def stop_waiting(self) -> None:
        """The broker is stopping: a wait at start-up gives up."""
        ...

    async def leave(self, config: BrokerConfig, cluster: ClusterMetadata, replaced: bool) -> None:
        """Before the broker stops serving (a controlled shutdown)."""
        ...

    async def stop_replication(self) -> None:
        """After the requests stopped, before the logs close: no append may come after."""
        ...

    async def close(self) -> None: ...


class SingleNode:
    """A cluster of one: its metadata in its log dir, every partition led here at epoch 0."""

    checkpoint_high_watermarks = False

    async def meta_properties(self, logs: LogManager, node_id: int, config: BrokerConfig) -> MetaProperties:
        return logs.ensure_meta_properties(node_id, config.cluster_id)

    async def load_logs(self, logs: LogManager, dynamic_configs: DynamicBrokerConfigs) -> None:
        # its dynamic broker configs are its first log dir's, read as the log manager was made
        await asyncio.to_thread(logs.startup)

    async def build(self, base: Foundation) -> BrokerParts:
        return await build_single_node(base)

    def advertise(self, cluster: ClusterMetadata, broker: LiveBroker) -> None:
        cluster.set_cluster_of_one(broker)

    async def join(
        self, parts: BrokerParts, base: Foundation, serve: Callable[[], None], tasks: list[asyncio.Task[None]]
    ) -> bool:
        serve()
        return True

    def log_dir_event_sender(self) -> Callable[[], Awaitable[None]] | None:
        return None

    def stop_waiting(self) -> None:
        pass

    async def leave(self, config: BrokerConfig, cluster: ClusterMetadata, replaced: bool) -> None:
        pass

    async def stop_replication(self) -> None:
        pass

    async def close(self) -> None:
        pass


class ClusterMembership:
    """A ZooKeeper cluster's broker: its session, registration and controller elector
    (`ZooKeeperMember`), its replica fetchers, and the change notifications it follows."""

    checkpoint_high_watermarks = True

    def __init__(self, member: ZooKeeperMember) -> None:
        self.member = member
        self.fetchers: ReplicaFetcherManager | None = None
        #: /config/brokers, read before the logs load (`load_logs`).
        self.broker_configs: ZkBrokerConfigs | None = None

    async def meta_properties(self, logs: LogManager, node_id: int, config: BrokerConfig) -> MetaProperties:
        await self.member.connect()
        # the cluster's id is /cluster/id; meta.properties must agree
        cluster_id = await self.member.cluster_id(config.cluster_id or generate_cluster_id())
        if config.cluster_id and config.cluster_id != cluster_id:
            raise ConfigError(
                f"cluster.id {config.cluster_id} is not this cluster's id {cluster_id} "
                "(ZooKeeper's /cluster/id): remove it or set that one",
                "cluster.id",
            )
        return logs.ensure_meta_properties(node_id, cluster_id)

    async def load_logs(self, logs: LogManager, dynamic_configs: DynamicBrokerConfigs) -> None:
        assert self.member.zk is not None
        self.broker_configs = ZkBrokerConfigs(self.member.zk, dynamic_configs.node_id, dynamic_configs)
        config = await self.broker_configs.load()
        apply_log_defaults(logs, config)
        logs.set_producer_id_expiration_ms(config.producer_id_expiration_ms)
        await asyncio.to_thread(logs.startup)

    async def build(self, base: Foundation) -> BrokerParts:
        assert self.member.zk is not None and self.broker_configs is not None
        return await build_cluster_member(base, self.member.zk, self.broker_configs)

    def advertise(self, cluster: ClusterMetadata, broker: LiveBroker) -> None:
        pass  # the controller's UpdateMetadata names the brokers, once registered

    async def join(
        self, parts: BrokerParts, base: Foundation, serve: Callable[[], None], tasks: list[asyncio.Task[None]]
    ) -> bool:
        """Register in ZooKeeper, serve, then run for controller (the controller sends LeaderAndIsr
        and UpdateMetadata to the endpoints registered; its channel reconnects until they listen)."""
        member, services, zk_parts = self.member, parts.services, parts.mode.zookeeper
        assert member.zk is not None and zk_parts is not None
        replicas = zk_parts.control
        self.fetchers = replicas.fetcher_manager  # stopped before the logs close
        tasks.append(asyncio.get_running_loop().create_task(replicas.leaders.run_isr_shrinks()))
        topic_configs = zk_parts.topic_configs
        topic_configs.follow(BROKER_CONFIG, zk_parts.broker_configs.on_change)
        loop = asyncio.get_running_loop()
        topic_configs.follow(USER_CONFIG, zk_parts.credentials.user_changed)
        topic_configs.start(loop)
        tokens = services.delegation_tokens
        if tokens is not None and tokens.enabled:
            TokenChangeListener(zk_parts.token_store, tokens).start(loop)
        authorizer = services.authorizer
        if authorizer is not None:
            AclChangeListener(member.zk, zk_parts.acl_store, authorizer).start(loop)
        services.join_zookeeper_cluster(replicas, base.inter_broker_security)
        if not await member.register(services.advertised, replicas, zk_parts.alter_partition):
            return False
        # As Kafka, only a registered broker processes requests: one whose id a live broker holds
        # has exited above, before any client reached it (its listeners were bound, not listening).
        serve()
        await member.start_controller(zk_parts.controller)
        return True

    def log_dir_event_sender(self) -> Callable[[], Awaitable[None]] | None:
        return self.member.propagate_log_dir_event

    def stop_waiting(self) -> None:
        self.member.stop_waiting()

    async def leave(self, config: BrokerConfig, cluster: ClusterMetadata, replaced: bool) -> None:
        member = self.member
        if (
            member.replicas is not None
            and member.registered
            and not replaced  # the controller knows another broker under this id
            and config.controlled_shutdown_enable
        ):
            # As Kafka: leaderships move away while this broker still serves, then it stops.
            member.replicas.leaving = True
            await controlled_shutdown(
                config, cluster, member.node_id, member.broker_epoch, member.inter_broker_security
            )

    async def stop_replication(self) -> None:
        if self.fetchers is not None:
            await self.fetchers.shutdown()  # before the logs close: no append may come after
        if self.member.replicas is not None:
            await self.member.replicas.leaders.close()

    async def close(self) -> None:
        await self.member.close()  # the controller stops, then the session ends
