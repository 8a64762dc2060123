"""How the broker is put together: every part built with its collaborators as constructor arguments.

A single node and a cluster member differ in where their metadata lives (the first log dir, or
ZooKeeper) and in who decides leadership (the node itself, at epoch 0, or the controller): each mode's
function builds its own stores, metadata cache, replica manager and topic administration
(`ModeParts`), and `_build` puts the same coordinators and services on top of either. Nothing here
serves, registers or starts a job: `server/broker.py` runs the parts in order.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

from odradek.cluster.controller.config import controller_config
from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.controller.service import ClusterOfOneController, Controller
from odradek.cluster.dynamic_configs import BrokerConfigStore, DynamicBrokerConfigs
from odradek.cluster.inter_broker_connection import InterBrokerSecurity
from odradek.cluster.internal_topics import SingleNodeInternalTopics, ZkInternalTopics
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.metadata.acls import LocalAclStore, ZkAclStore
from odradek.cluster.metadata.broker_configs import LocalBrokerConfigs, ZkBrokerConfigs
from odradek.cluster.metadata.client_metrics import LocalClientMetricsConfigs, ZkClientMetricsConfigs
from odradek.cluster.metadata.client_quotas import (
    LocalQuotaStore,
    ZkQuotaChangeFollower,
    ZkQuotaStore,
)
from odradek.cluster.metadata.delegation_tokens import LocalTokenStore, ZkTokenStore
from odradek.cluster.metadata.group_configs import LocalGroupConfigs, ZkGroupConfigs
from odradek.cluster.metadata.producer_ids import LocalProducerIdManager, ZkProducerIdManager
from odradek.cluster.metadata.scram_credentials import LocalScramCredentialStore, ZkScramCredentialStore
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from odradek.cluster.metadata.topics import LocalTopicAdmin, TopicAdmin
from odradek.cluster.metadata.zk_topics import ZkTopicAdmin
from odradek.cluster.partition_end_offsets import PartitionEndOffsetsClient
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.alter_partition import alter_partition_manager
from odradek.cluster.replication.fetcher_wiring import FollowerSettings
from odradek.cluster.replication.replication_quota import ReplicationQuotas
from odradek.cluster.replication.truncation_checkpoints import TruncationCheckpoints
from odradek.cluster.share_state_client import ShareStatePersister
from odradek.cluster.topic_checks import topic_min_insync_replicas
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.config.broker import BrokerConfig
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.ports import InternalTopics, ProducerIdSource
from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.handlers._common.config_alteration import reconfigure
from odradek.handlers._common.services import Services
from odradek.partition.fetch_sessions import FetchSessionCache
from odradek.partition.leadership import Leadership
from odradek.partition.replica_manager import ReplicaManager as PartitionReplicas
from odradek.partition.share.manager import SharePartitionManager
from odradek.security.authorizer import AclAuthorizer, authorizer_from_config
from odradek.security.client_quotas import ClientQuotas
from odradek.security.delegation_tokens import DelegationTokenManager, TokenInformation, token_settings
from odradek.security.scram_credentials import CredentialStore
from odradek.security.tls_reload import TlsReloader
from odradek.server.leadership_listeners import follow_leadership
from odradek.server.member_parts import ZooKeeperParts
from odradek.server.share_coordinator import build_share_coordinator
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from odradek.storage.log_manager import LogManager
from odradek.telemetry.manager import ClientMetricsManager


@dataclass(frozen=True)
class Foundation:
    """What the broker settled before building anything: its id, its cluster's, its loaded logs."""

    config: BrokerConfig
    node_id: int
    cluster_id: str
    logs: LogManager
    dynamic_configs: DynamicBrokerConfigs
    truncation_checkpoints: TruncationCheckpoints
    inter_broker_security: InterBrokerSecurity
    #: The configuration as AlterConfigs last left it (read by the replication quotas).
    live_config: Callable[[], BrokerConfig]


@dataclass(frozen=True)
class ModeParts:
    """What a single node and a cluster member build differently: where metadata is kept and who
    decides leadership."""

    config: BrokerConfig
    cluster: ClusterMetadata
    replicas: PartitionReplicas
    topics: TopicAdmin
    internal_topics: InternalTopics
    group_configs: LocalGroupConfigs | ZkGroupConfigs
    client_metrics: ClientMetricsManager
    client_metrics_configs: LocalClientMetricsConfigs | ZkClientMetricsConfigs
    producer_ids: ProducerIdSource
    credentials: CredentialStore
    authorizer: AclAuthorizer | None
    token_store: LocalTokenStore | ZkTokenStore
    stored_tokens: list[TokenInformation]
    client_quotas: ClientQuotas
    #: The replication throttles: the leader's, and a member's fetchers' (made by its replica manager).
    replication_quotas: ReplicationQuotas
    #: The controller the handlers ask: a single node's, of a cluster of one; a member's elector, started
    #: once the member is registered (server/membership.py).
    controller: Controller
    #: Where AlterConfigs writes a broker layer: a single node's file, a member's /config/brokers.
    broker_configs: BrokerConfigStore
    #: A cluster member's: what it follows in ZooKeeper once it joins (server/membership.py).
    zookeeper: ZooKeeperParts | None = None


@dataclass(frozen=True)
class BrokerParts:
    """Everything the broker runs, built and not started."""

    mode: ModeParts
    services: Services
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    share_states: ShareCoordinator
    end_offsets: PartitionEndOffsetsClient

    @property
    def config(self) -> BrokerConfig:
        return self.mode.config

    def stop(self) -> None:
        """At shutdown, once requests are no longer read and before the in-flight ones drain: the
        coordinators stop, what waits for an append is answered, the clients to other brokers close."""
        services = self.services
        services.appends.wake_all()
        self.groups.stop()
        self.transactions.stop()
        self.share_states.stop()
        if services.share_persister is not None:
            services.share_persister.close()
        self.end_offsets.close()
        if services.share_partitions is not None:
            services.share_partitions.close()
        if services.txn_verification is not None:
            services.txn_verification.close()
        services.regexes.close()
        # Before the drain: queued record work is dropped and the jobs under way stop at their next
        # checkpoint, so that no request waits for a rewrite to end; the requests that needed them
        # close their connections unanswered, as Kafka drops the requests it has not handled.
        services.record_workers.shutdown()

    @property
    def tokens_enabled(self) -> bool:
        return token_settings(self.mode.config).enabled


async def build_single_node(base: Foundation) -> BrokerParts:
    """A cluster of one: it leads each partition at epoch 0, with an ISR of itself, and keeps its
    metadata in its first log dir."""
    config, logs, first_dir = base.config, base.logs, base.logs.log_dirs[0]
    cluster = ClusterMetadata(base.cluster_id, base.node_id, [])
    replicas = PartitionReplicas(base.node_id, cluster, logs, **_leaders(config, cluster, base.live_config))
    topics = LocalTopicAdmin(config, cluster, logs, base.node_id, replicas)
    # GROUP config resources, in the log dir
    group_configs = LocalGroupConfigs(first_dir)
    await asyncio.to_thread(group_configs.load)
    # client telemetry's subscriptions (KIP-714), all read before a client is served
    client_metrics = ClientMetricsManager(config.telemetry_max_bytes)
    producer_ids = LocalProducerIdManager(first_dir)
    credentials = LocalScramCredentialStore.load(first_dir)
    authorizer = authorizer_from_config(config, LocalAclStore(first_dir))
    token_store = LocalTokenStore(first_dir)
    stored_tokens = await asyncio.to_thread(token_store.load) if token_settings(config).enabled else []
    client_metrics_configs = LocalClientMetricsConfigs(first_dir, client_metrics)
    await asyncio.to_thread(client_metrics_configs.load)
    quota_store = LocalQuotaStore(first_dir)
    client_quotas = ClientQuotas(config.quota_window_num, config.quota_window_size_seconds, quota_store)
    for entity, values in quota_store.load().items():
        client_quotas.apply(entity, values)
    mode = ModeParts(
        config=config,
        cluster=cluster,
        replicas=replicas,
        topics=topics,
        internal_topics=SingleNodeInternalTopics(topics, cluster),
        group_configs=group_configs,
        client_metrics=client_metrics,
        client_metrics_configs=client_metrics_configs,
        producer_ids=producer_ids,
        credentials=credentials,
        authorizer=authorizer,
        token_store=token_store,
        stored_tokens=stored_tokens,
        client_quotas=client_quotas,
        replication_quotas=ReplicationQuotas.of(base.node_id, base.live_config),
        controller=ClusterOfOneController(cluster, base.node_id),
        broker_configs=LocalBrokerConfigs(base.dynamic_configs),
    )
    return await _build(base, mode)


async def build_cluster_member(
    base: Foundation, zk: ZooKeeperClient, zk_broker_configs: ZkBrokerConfigs
) -> BrokerParts:
    """A ZooKeeper cluster's broker: the controller decides what it leads; its metadata (dynamic
    configs, credentials, ACLs, quotas, tokens, producer-id blocks) is ZooKeeper's, shared.
    `zk_broker_configs`: /config/brokers, read before the logs loaded (server/membership.py)."""
    config = zk_broker_configs.dynamic.config()
    cluster = ClusterMetadata(base.cluster_id, -1, [])  # the controller is not known yet
    security = base.inter_broker_security
    # its controller elector (started once registered) hears of topics turning unclean election on; its
    # settings are the configuration with /config/brokers applied, as Kafka's controller reads them
    controller = KafkaController(zk, controller_config(config, base.node_id, security))
    topic_configs = TopicConfigSync(zk, cluster, base.logs, on_change=controller.topic_configs_changed)
    replication_quotas = ReplicationQuotas.of(base.node_id, base.live_config)
    # its leaders' sender of ISR changes, started once registered (the broker epoch is the registration's)
    alter_partition = alter_partition_manager(
        base.config, base.node_id, cluster, lambda: control.broker_epoch, security
    )
    # what this broker leads (at which epoch, as the controller says) and follows, with its fetchers
    control = ReplicaManager(
        base.node_id,
        cluster,
        base.logs,
        truncation_checkpoints=base.truncation_checkpoints,
        on_metadata_update=topic_configs.apply_known,
        followers=FollowerSettings(config, base.live_config, replication_quotas.follower, security),
        isr_updater=alter_partition,
        **_leaders(config, cluster, base.live_config),
    )
    topics = ZkTopicAdmin(config, cluster, zk)
    # GROUP config resources, in ZooKeeper (/config/groups)
    group_configs = ZkGroupConfigs(zk)
    await group_configs.start()
    client_metrics = ClientMetricsManager(config.telemetry_max_bytes)
    client_metrics_configs = ZkClientMetricsConfigs(zk, client_metrics)
    await client_metrics_configs.start()
    producer_ids = ZkProducerIdManager(zk, base.node_id)
    # credentials and ACLs are ZooKeeper's (/config/users, /kafka-acl), shared by the cluster
    credentials = await asyncio.to_thread(ZkScramCredentialStore(zk).load)
    acl_store = ZkAclStore(zk)
    authorizer = await asyncio.to_thread(authorizer_from_config, config, acl_store)
    token_store = ZkTokenStore(zk)
    # as Kafka: the token znodes are made and followed only when tokens are enabled
    stored_tokens = await asyncio.to_thread(token_store.load) if token_settings(config).enabled else []
    quota_store = ZkQuotaStore(zk)  # read and followed by `ZkQuotaChangeFollower` below
    client_quotas = ClientQuotas(config.quota_window_num, config.quota_window_size_seconds, quota_store)
    mode = ModeParts(
        config=config,
        cluster=cluster,
        replicas=control,
        topics=topics,
        internal_topics=ZkInternalTopics(topics, cluster),
        group_configs=group_configs,
        client_metrics=client_metrics,
        client_metrics_configs=client_metrics_configs,
        producer_ids=producer_ids,
        credentials=credentials,
        authorizer=authorizer,
        token_store=token_store,
        stored_tokens=stored_tokens,
        client_quotas=client_quotas,
        replication_quotas=replication_quotas,
        controller=controller,
        broker_configs=zk_broker_configs,
        zookeeper=ZooKeeperParts(
            control,
            zk_broker_configs,
            credentials,
            token_store,
            acl_store,
            controller,
            alter_partition,
            topic_configs,
        ),
    )
    parts = await _build(base, mode)
    # the coordinators (and the topic configs of new replicas) follow this member's leaderships
    control.add_leadership_listener(
        follow_leadership(topic_configs, parts.groups, parts.transactions, parts.share_states, parts.services)
    )
    # every quota read, and changes followed, before serving
    await ZkQuotaChangeFollower(quota_store, client_quotas).start()
    return parts


async def _build(base: Foundation, mode: ModeParts) -> BrokerParts:
    """The coordinators and the handlers' services, the same over either mode's parts."""
    config, logs, node_id, cluster = mode.config, base.logs, base.node_id, mode.cluster
    replicas = mode.replicas
    leadership: Leadership = replicas  # the coordinators append as leaders too
    appends = replicas.appends  # the purgatory's append events are the replica manager's
    regexes = RegexMatcher()  # one worker for the regexes clients send, shared by both users
    # Share groups' delivery state (__share_group_state), replicated as the other coordinators' writes
    share_states = build_share_coordinator(
        config,
        cluster,
        mode.internal_topics,
        logs,
        node_id,
        leadership,
    )
    # What the share partitions and share groups persist through: here, or the coordinator's broker
    share_persister = ShareStatePersister(node_id, share_states, config, cluster, base.inter_broker_security)
    end_offsets = PartitionEndOffsetsClient(
        node_id, config, cluster, leadership, logs, base.inter_broker_security
    )
    group_config_lookup = mode.group_configs.configs
    groups = GroupCoordinator(
        config,
        cluster,
        mode.internal_topics,
        logs,
        node_id,
        leadership=leadership,
        regexes=regexes,
        share_persister=share_persister,
        end_offsets=end_offsets,
        group_configs=group_config_lookup,
    )
    transactions = TransactionCoordinator(
        config,
        cluster,
        mode.internal_topics,
        logs,
        node_id,
        mode.producer_ids,
        groups,
        leadership=leadership,
        marker_sender=InterBrokerTxnMarkerSender(config, cluster, node_id, base.inter_broker_security),
    )
    services = Services(
        node_id=node_id,
        config=config,
        cluster=cluster,
        topics=mode.topics,
        logs=logs,
        appends=appends,
        groups=groups,
        transactions=transactions,
        producer_ids=mode.producer_ids,
        replicas=replicas,
        controller=mode.controller,
        dynamic_configs=base.dynamic_configs,
        broker_configs=mode.broker_configs,
        fetch_sessions=FetchSessionCache(config.max_incremental_fetch_session_cache_slots),
        scram_credentials=mode.credentials,
        delegation_tokens=DelegationTokenManager(token_settings(config), mode.token_store),
        authorizer=mode.authorizer,
        client_quotas=mode.client_quotas,
        replication_quotas=mode.replication_quotas,
        regexes=regexes,
        share_coordinator=share_states,
        share_persister=share_persister,
        # Share groups off: no share partitions, so ShareFetch/ShareAcknowledge answer UNSUPPORTED_VERSION
        # as Kafka 4.4 at share.version=0.
        share_partitions=SharePartitionManager.for_broker(config, share_persister, group_config_lookup)
        if groups.share.enabled
        else None,
        client_metrics=mode.client_metrics,
        client_metrics_configs=mode.client_metrics_configs,
        group_configs=mode.group_configs,
        # the TLS listeners' stores reloaded by AlterConfigs (their acceptors register once bound); also
        # refuses stores for a non-TLS listener; the inter-broker client's context is reloaded too
        tls=TlsReloader(config, base.inter_broker_security),
    )
    # a broker layer's change, once its store has it, is the configuration every service reads
    base.dynamic_configs.add_reconfigurable(functools.partial(reconfigure, services))
    if services.delegation_tokens is not None:
        await services.delegation_tokens.load(mode.stored_tokens)
    return BrokerParts(mode, services, groups, transactions, share_states, end_offsets)


class _LeaderSettings(TypedDict):
    replica_lag_time_max_ms: int
    replica_selector_class: str | None
    min_insync_replicas: Callable[[str], int]


def _leaders(
    config: BrokerConfig, cluster: ClusterMetadata, live_config: Callable[[], BrokerConfig]
) -> _LeaderSettings:
    """The leaders' settings, the same in both modes (a single node's leaders are alone in their ISR).
    A topic's `min.insync.replicas` is its config in the metadata cache, else the configuration's as
    AlterConfigs last left it (`live_config`): read without the topic administration, which a single
    node makes after its replica manager."""
    return _LeaderSettings(
        replica_lag_time_max_ms=config.replica_lag_time_max_ms,
        replica_selector_class=config.replica_selector_class or None,
        min_insync_replicas=topic_min_insync_replicas(live_config, cluster),
    )
