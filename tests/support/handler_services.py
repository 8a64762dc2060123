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

from pathlib import Path
from typing import Any

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.cluster.leadership import SingleNodeLeadership
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, TopicState
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.topics import TopicAdmin
from odradek.config.broker import BrokerConfig
from odradek.config.topic import resolve_topic_config
from odradek.coordinator.producer_ids import ProducerIdManager
from odradek.handlers.context import ANONYMOUS_PRINCIPAL, RequestContext
from odradek.handlers.fetch_sessions import FetchSessionCache
from odradek.handlers.registry import registration_for
from odradek.handlers.services import Services
from odradek.protocol.messages.request_header import RequestHeader
from odradek.server.delayed import AppendNotifier
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager

NODE_ID = 1
LISTENER = "PLAINTEXT"


class HandlerBroker:
    """One node's Services on the log directory `log_dir`; `overrides` are broker configs by Kafka name."""

    def __init__(
        self,
        log_dir: Path,
        *,
        node_id: int = NODE_ID,
        zookeeper_mode: bool = False,
        replicated: bool = False,
        **overrides: str,
    ) -> None:
        settings = {"node.id": str(node_id), "log.dirs": str(log_dir), **overrides}
        self.config = BrokerConfig(settings, warn_unknown=False)
        self.logs = LogManager(
            [log_dir],
            LogConfig.from_mapping(dict(resolve_topic_config({}, self.config))),
            producer_id_expiration_ms=self.config.producer_id_expiration_ms,
            # replicated=True: as the broker in a cluster, the high watermark is the replica manager's
            # (followers' fetches move it); else every append moves it, which most tests assume.
            single_node=not replicated,
        )
        self.logs.startup()
        meta = self.logs.ensure_meta_properties(node_id)
        endpoint = BrokerEndpoint(node_id, "127.0.0.1", 9092)  # advertised only: nothing listens
        cluster = ClusterMetadata(meta.cluster_id, node_id, [endpoint])
        topics = TopicAdmin(self.config, cluster, self.logs, node_id)
        topics.load()
        self.services = Services(
            node_id=node_id,
            config=self.config,
            cluster=cluster,
            topics=topics,
            logs=self.logs,
            appends=AppendNotifier(),
            fetch_sessions=FetchSessionCache(self.config.max_incremental_fetch_session_cache_slots),
            producer_ids=ProducerIdManager(self.logs.log_dirs[0]),
            leadership=SingleNodeLeadership(cluster, node_id),
            advertised={LISTENER: [endpoint]},
        )
        self._correlation_id = 0
        self.replicas: ReplicaManager | None = None
        if zookeeper_mode:
            self.replicas = ReplicaManager(node_id, cluster, self.logs)
            # as Broker._join_cluster
            self.replicas.leaders.on_high_watermark = self.services.appends.wake
            self.replicas.leaders.min_insync_replicas = self.services.topics.min_insync_replicas
            self.services.appends.on_append = self.replicas.leaders.on_append
            self.services.join_zookeeper_cluster(self.replicas)

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
    ) -> Any:
        """The handler's response to `request` sent at `version` on `listener` by `principal` (decoded
        from its own encoding), from the connection of `client_port` (one client's connection by
        default)."""
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
            header, version, "127.0.0.1", client_port, listener, self.services, principal
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
