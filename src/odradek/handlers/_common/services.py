"""The broker's services as handlers see them: configuration, metadata, topics, logs, waiting fetches."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from odradek.cluster.controller.service import Controller
from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.metadata import BrokerEndpoint, BrokerMode, ClusterMetadata
from odradek.cluster.metadata.group_configs import GroupConfigStore
from odradek.cluster.replication.replication_quota import ReplicationQuotas
from odradek.cluster.share_state_client import ShareStatePersister
from odradek.cluster.txn_verification import InterBrokerTxnVerifier
from odradek.config.broker import BrokerConfig
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.ports import ProducerIdSource
from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.partition.fetch_sessions import FetchSessionCache
from odradek.partition.leadership import Leadership
from odradek.partition.purgatory import AppendNotifier
from odradek.partition.replica_manager import ReplicaManager as PartitionReplicas
from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.txn_verification import TxnVerification
from odradek.security.client_quotas import ClientQuotas
from odradek.storage.record_workers import RecordWorkers
from odradek.telemetry.config_store import ClientMetricsConfigStore
from odradek.telemetry.manager import ClientMetricsManager

if TYPE_CHECKING:
    from odradek.cluster.dynamic_configs import BrokerConfigStore, DynamicBrokerConfigs
    from odradek.cluster.metadata.topics import TopicAdmin
    from odradek.cluster.replica_manager import ReplicaManager
    from odradek.coordinator.group_coordinator import GroupCoordinator
    from odradek.coordinator.txn_coordinator import TransactionCoordinator
    from odradek.security.authorizer import AclAuthorizer
    from odradek.security.delegation_tokens import DelegationTokenManager, TokenCredential
    from odradek.security.scram_credentials import CredentialStore, ScramCredential
    from odradek.security.tls_reload import TlsReloader
    from odradek.storage.log_manager import LogManager


#: The longest a Metadata or DescribeCluster request waits for a starting cluster member's first
#: UpdateMetadata (clients' request timeouts are 30 s and more).
FIRST_METADATA_WAIT_S = 10.0


class TrafficRecorder(Protocol):
    """Counts what produce and fetch move, per topic (the metrics endpoint, when it is on)."""

    def produced(self, topic: str, size: int, records: int) -> None: ...

    def fetched(self, topic: str, size: int) -> None: ...


@dataclass(eq=False)
class Services:
    node_id: int
    config: BrokerConfig
    cluster: ClusterMetadata
    topics: TopicAdmin
    logs: LogManager
    appends: AppendNotifier
    fetch_sessions: FetchSessionCache
    producer_ids: ProducerIdSource
    #: The partitions hosted and led here, at which epoch (partition/replica_manager.py): in a cluster
    #: as the controller's LeaderAndIsr made them, on a single node all of its own, at epoch 0 with an
    #: ISR of itself. What the data path asks, and `leadership`, which the coordinators share.
    replicas: PartitionReplicas
    #: This broker's controller (cluster/controller/service.py): a cluster member's elector, which
    #: serves ControlledShutdown, ElectLeaders, the reassignments and AlterPartition while it is the
    #: active controller; a single node's, the controller of a cluster of one, always active.
    controller: Controller
    #: Advertised endpoints of every broker, by listener name.
    advertised: dict[str, list[BrokerEndpoint]] = field(default_factory=dict)
    #: Set while the metrics endpoint runs (metrics.port > 0); None costs the hot path one check.
    traffic: TrafficRecorder | None = None
    #: The dynamic broker config layers (AlterConfigs on BROKER resources) and the configuration they make.
    dynamic_configs: DynamicBrokerConfigs | None = None
    #: Where a change of those layers is written, and applied from: a single node's file, a cluster
    #: member's /config/brokers (cluster/metadata/broker_configs.py).
    broker_configs: BrokerConfigStore | None = None
    #: Consumer groups and committed offsets (`__consumer_offsets`).
    groups: GroupCoordinator | None = None
    #: Transactional ids and their transactions (`__transaction_state`).
    transactions: TransactionCoordinator | None = None
    #: Share groups' delivery state (`__share_group_state`) of the keys this broker coordinates.
    share_coordinator: ShareCoordinator | None = None
    #: What share partitions persist their state through (KIP-932's Persister): the share coordinator
    #: here, or the RPCs to the broker coordinating the key (cluster/share_state_client.py).
    share_persister: ShareStatePersister | None = None
    #: Share groups' share partitions on this leader and their share sessions (ShareFetch,
    #: ShareAcknowledge); None until the broker runs the share coordinator they keep their state in.
    share_partitions: SharePartitionManager | None = None
    #: Unexpected exceptions answered UNKNOWN_SERVER_ERROR, by API key (logged where they happen).
    unexpected_errors: Counter[int] = field(default_factory=Counter)
    #: ZooKeeper mode only: the replica manager's control half, which applies the controller's
    #: LeaderAndIsr, StopReplica and UpdateMetadata (APIs only a cluster member serves); `replicas`.
    replica_control: ReplicaManager | None = None
    #: ZooKeeper mode only: a leader's KIP-890 verification with other brokers' transaction coordinators
    #: (partition/txn_verification.py, asking through cluster/txn_verification.py).
    txn_verification: TxnVerification | None = None
    #: The threads of the record work of produces and fetches (rewrites in a topic's codec, record
    #: checks, conversions between record formats), which the event loop never does itself.
    record_workers: RecordWorkers = field(default_factory=RecordWorkers)

    def join_zookeeper_cluster(
        self, replicas: ReplicaManager, security: InterBrokerSecurity = PLAINTEXT
    ) -> None:
        """Make this broker a member of a ZooKeeper cluster: from now on its metadata cache and its
        leaderships are the controller's (LeaderAndIsr, UpdateMetadata, StopReplica are served)."""
        self.cluster.mode = BrokerMode.ZOOKEEPER
        self.replicas = replicas
        self.replica_control = replicas
        self.txn_verification = TxnVerification(
            self.node_id,
            self.config,
            replicas,
            self.logs,
            InterBrokerTxnVerifier(self.config, self.cluster, self.node_id, security),
        )

    @property
    def mode(self) -> BrokerMode:
        return self.cluster.mode

    @property
    def leadership(self) -> Leadership:
        """Which partitions this broker leads, at which epoch (partition/leadership.py): the replica
        manager, in both modes."""
        return self.replicas

    #: SCRAM users (AlterUserScramCredentials), in the log dir or ZooKeeper; None: SCRAM is not served.
    scram_credentials: CredentialStore | None = None
    #: Delegation tokens (the four token APIs, and SCRAM's `tokenauth=true`); None: not built here
    #: (handler tests), answered as tokens disabled.
    delegation_tokens: DelegationTokenManager | None = None
    #: Checks TLS and SASL settings of an AlterConfigs change, and rebuilds the TLS listeners' contexts
    #: (their acceptors register with it once bound); None: not built here (handler tests).
    tls: TlsReloader | None = None
    #: ACL authorization (authorizer.class.name); None: every request is allowed and nothing is checked.
    authorizer: AclAuthorizer | None = None
    #: Client quotas (DescribeClientQuotas / AlterClientQuotas) and their enforcement on every request.
    client_quotas: ClientQuotas = field(default_factory=lambda: ClientQuotas(11, 1))
    #: Replication throttles (leader.replication.throttled.rate and the topics' throttled replicas):
    #: the leader's side is applied to followers' fetches, the follower's by the replica fetchers.
    replication_quotas: ReplicationQuotas = field(default_factory=ReplicationQuotas.unbounded)
    #: Where the regular expressions clients send are compiled and matched (off the event loop).
    regexes: RegexMatcher = field(default_factory=RegexMatcher)
    #: Client telemetry (KIP-714): the CLIENT_METRICS subscriptions, client instances, pushed metrics.
    client_metrics: ClientMetricsManager = field(default_factory=lambda: ClientMetricsManager(1024 * 1024))
    #: Where CLIENT_METRICS config resources are stored (log dir or ZooKeeper); None: they cannot be set.
    client_metrics_configs: ClientMetricsConfigStore | None = None
    #: Where GROUP config resources are kept (log dir or ZooKeeper); None: they cannot be set.
    group_configs: GroupConfigStore | None = None

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """A SCRAM user's credential, for the SASL exchange (None: no such user)."""
        store = self.scram_credentials
        return store.get(user, mechanism) if store is not None else None

    def token_credential(self, token_id: str, mechanism: str) -> TokenCredential | None:
        """A delegation token's SCRAM credential and owner, for the SASL exchange (None: no such token)."""
        tokens = self.delegation_tokens
        return tokens.credential(token_id, mechanism) if tokens is not None else None

    @property
    def auto_create_topics(self) -> bool:
        return self.config.auto_create_topics_enable

    async def await_first_metadata(self) -> None:
        """A cluster member serves once registered, before the controller's first UpdateMetadata
        reaches it; a Metadata or DescribeCluster answered in between names no broker and no controller,
        which librdkafka's admin client never looks up again (its request then hangs to its timeout).
        Such a request waits for that UpdateMetadata, at most FIRST_METADATA_WAIT_S (no controller:
        answered with what this broker knows), as a KRaft broker serves only once it has the metadata.
        A single node's metadata is complete before it serves (`ClusterMetadata.set_cluster_of_one`)."""
        if not self.cluster.first_update.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cluster.first_update.wait(), FIRST_METADATA_WAIT_S)

    def advertised_brokers(self, listener: str) -> list[BrokerEndpoint]:
        """The live brokers as a client on `listener` should reach them (Kafka answers per listener; a
        broker without that listener is left out). A single node: itself."""
        return self.cluster.brokers_on_listener(listener)
