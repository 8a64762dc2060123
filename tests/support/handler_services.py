"""The broker's handlers in-process: Services built as the broker builds them, on real storage, no socket.

`HandlerBroker(tmp_path)` opens a LogManager in a temporary directory and wires the same services as
`Broker.start` (cluster metadata, topic admin, append notifier, fetch sessions, producer ids); `call`
sends a request object through the codec at the version asked (so fields the version lacks take their
defaults, as on the wire) to the handler registered for it, and returns the handler's response object.
The group coordinator is left out (Services.groups is None): tests of groups use the coordinator harness.
Everything that waits (fetch long-polls, topic creation) needs a running loop: call from `async` code.

`HandlerBroker(tmp_path, node_id=2, zookeeper_mode=True)` is one member of a ZooKeeper cluster as the
wiring will make it (Services.join_zookeeper_cluster with a ReplicaManager), without ZooKeeper: the
test plays the controller, sending LeaderAndIsr / UpdateMetadata / StopReplica through `call`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.controller.service import ClusterOfOneController
from odradek.cluster.dynamic_configs import BrokerConfigStore, DynamicBrokerConfigs
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker, TopicState
from odradek.cluster.metadata.client_metrics import LocalClientMetricsConfigs
from odradek.cluster.metadata.group_configs import LocalGroupConfigs
from odradek.cluster.metadata.producer_ids import LocalProducerIdManager
from odradek.cluster.metadata.topics import LocalTopicAdmin
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.topic_checks import topic_min_insync_replicas
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.handlers._common.config_alteration import reconfigure
from odradek.handlers._common.context import ANONYMOUS_PRINCIPAL, RequestContext
from odradek.handlers._common.registry import registration_for
from odradek.handlers._common.services import Services
from odradek.partition.fetch_sessions import FetchSessionCache
from odradek.partition.replica_manager import ReplicaManager as PartitionReplicas
from odradek.protocol.messages.request_header import RequestHeader
from odradek.security.authenticator import SaslAuthenticator
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr, JudgedByTopicStore
from odradek.telemetry.manager import ClientMetricsManager

NODE_ID = 1
LISTENER = "PLAINTEXT"


class _NotController:
    """A cluster member's controller elector that has not won the election: asked whether it is, and
    told of AlterConfigs' unclean.leader.election.enable (for when it is)."""

    is_active = False

    def set_unclean_leader_election_enable(self, enabled: bool) -> None:
        pass


class HandlerBroker:
    """One node's Services on the log directory `log_dir`; `overrides` are broker configs by Kafka name."""

    def __init__(
        self,
        log_dir: Path,
        *,
        node_id: int = NODE_ID,
        zookeeper_mode: bool = False,
        replicated: bool = False,
        extra_log_dirs: tuple[Path, ...] = (),
        **overrides: str,
    ) -> None:
        settings = {"node.id": str(node_id), "log.dirs": str(log_dir), **overrides}
        self.config = BrokerConfig(settings, warn_unknown=False)
        self.logs = LogManager(
            [log_dir, *extra_log_dirs],
            LogConfig.from_mapping(dict(resolve_topic_config({}, self.config))),
            producer_id_expiration_ms=self.config.producer_id_expiration_ms,
            # replicated=True: as the broker in a cluster, the logs are not the topic store's (its
            # stray-log rule is a single node's); the high watermark is the replica manager's in both
            strays=JudgedByLeaderAndIsr() if replicated else JudgedByTopicStore(),
        )
        self.logs.startup()
        meta = self.logs.ensure_meta_properties(node_id)
        endpoint = BrokerEndpoint(node_id, "127.0.0.1", 9092)  # advertised only: nothing listens
        cluster = ClusterMetadata(meta.cluster_id, node_id, [endpoint])
        # as Broker.start: a cluster member's replica manager takes the controller's requests, a single
        # node's leads its own partitions
        # as server/wiring.py: a topic's min.insync.replicas, else the broker's as AlterConfigs left it
        min_insync = topic_min_insync_replicas(lambda: self.services.config, cluster)
        control = (
            ReplicaManager(node_id, cluster, self.logs, min_insync_replicas=min_insync)
            if zookeeper_mode
            else None
        )
        replicas = control or PartitionReplicas(node_id, cluster, self.logs, min_insync_replicas=min_insync)
        topics = LocalTopicAdmin(self.config, cluster, self.logs, node_id, replicas)
        topics.load()
        client_metrics = ClientMetricsManager(self.config.telemetry_max_bytes)
        client_metrics_configs = LocalClientMetricsConfigs(log_dir, client_metrics)
        client_metrics_configs.load()
        group_configs = LocalGroupConfigs(log_dir)
        group_configs.load()
        self.services = Services(
            node_id=node_id,
            config=self.config,
            cluster=cluster,
            topics=topics,
            logs=self.logs,
            appends=replicas.appends,
            fetch_sessions=FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots),
            producer_ids=LocalProducerIdManager(self.logs.log_dirs[0]),
            replicas=replicas,
            # a single node's controller is of a cluster of one; a member's has not won the election
            controller=_NotController() if zookeeper_mode else ClusterOfOneController(cluster, node_id),
            advertised={LISTENER: [endpoint]},
            client_metrics=client_metrics,
            client_metrics_configs=client_metrics_configs,
            group_configs=None if zookeeper_mode else group_configs,
        )
        if not zookeeper_mode:  # as a single node's Broker.start once its listeners are bound
            cluster.set_cluster_of_one(LiveBroker(node_id, {LISTENER: endpoint}))
        self._correlation_id = 0
        self.replicas: ReplicaManager | None = control
        if control is not None:  # as Broker._join_cluster
            self.services.join_zookeeper_cluster(control)

    def keep_broker_configs(self, dynamic: DynamicBrokerConfigs, store: BrokerConfigStore) -> None:
        """As server/wiring.py: dynamic broker configs (AlterConfigs on BROKER resources) kept in `store`,
        each change it applies made the configuration every service reads."""
        self.services.dynamic_configs = dynamic
        self.services.broker_configs = store
        dynamic.add_reconfigurable(functools.partial(reconfigure, self.services))

    async def create_topic(
        self, name: str, partitions: int = 1, configs: dict[str, str | None] | None = None
    ) -> TopicState:
        return await self.services.topics.create_topic(name, partitions, 1, configs=configs)

    def log(self, topic: str, partition: int = 0) -> Log:
        found = self.logs.get_log(topic, partition)
        assert found is not None, f"no log for {topic}-{partition}"
        return found

    async def call(
        self,
        request: Any,
        version: int,
        listener: str = LISTENER,
        principal: str = ANONYMOUS_PRINCIPAL,
        client_port: int = 50000,
        security_protocol: str = "PLAINTEXT",
        sasl: SaslAuthenticator | None = None,
    ) -> Any:
        """The handler's response to `request` sent at `version` on `listener` by `principal` (decoded
        from its own encoding), from the connection of `client_port` (one client's connection by
        default; its connection id is the port), a connection of `security_protocol` whose SASL exchange
        is `sasl`."""
        api_key = type(request).API_KEY
        registration = registration_for(api_key, version, self.services.mode)
        assert registration is not None, f"the broker does not serve API {api_key} v{version}"
        self._correlation_id += 1
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self._correlation_id,
            client_id="handler-tests",
        )
        context = RequestContext(
            header,
            version,
            "127.0.0.1",
            client_port,
            listener,
            self.services,
            principal,
            security_protocol=security_protocol,
            sasl=sasl,
            connection_id=client_port,  # one connection per client port
        )
        decoded = type(request).decode(request.encode(version), version)
        return await registration.handler(decoded, context)

    async def call_over_wire(
        self, request: Any, version: int, listener: str = LISTENER, principal: str = ANONYMOUS_PRINCIPAL
    ) -> Any:
        """As `call`, with the response too sent through the codec: what a client decodes at `version`
        (fields and tagged fields the version lacks are gone)."""
        response = await self.call(request, version, listener, principal)
        if response is None:
            return None
        return type(response).decode(response.encode(version), version)

    def close(self) -> None:
        self.services.record_workers.shutdown()
        self.services.regexes.close()
        self.logs.shutdown()
