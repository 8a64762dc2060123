"""The controller's settings, as the broker reads them from server.properties."""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.cluster.inter_broker_connection import InterBrokerSecurity
from odradek.cluster.inter_broker_versions import LATEST_VERSIONS, InterBrokerVersions
from odradek.config.broker import BrokerConfig


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    broker_id: int
    #: inter.broker.listener.name; when unset, Kafka names it after security.inter.broker.protocol.
    inter_broker_listener_name: str | None = None
    security_inter_broker_protocol: str = "PLAINTEXT"
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: float = 300.0
    leader_imbalance_per_broker_percentage: int = 10
    #: How the controller's channels connect to the brokers (the inter-broker listener's TLS and SASL).
    inter_broker_security: InterBrokerSecurity = field(default_factory=InterBrokerSecurity)
    #: inter.broker.protocol.version's LeaderAndIsr, UpdateMetadata and StopReplica versions.
    inter_broker_versions: InterBrokerVersions = LATEST_VERSIONS
    #: As Kafka's ControllerChannelManager: controller.socket.timeout.ms bounds connecting to a broker,
    #: request.timeout.ms its answer (then the controller connects again and resends).
    connect_timeout_s: float = 30.0
    request_timeout_s: float = 30.0

    @property
    def inter_broker_listener(self) -> str:
        return self.inter_broker_listener_name or self.security_inter_broker_protocol


def controller_config(config: BrokerConfig, node_id: int, security: InterBrokerSecurity) -> ControllerConfig:
    """A cluster member's controller settings, from its broker's configuration as it started (the
    dynamic broker configs ZooKeeper held then applied, as Kafka's controller reads its KafkaConfig)."""
    return ControllerConfig(
        broker_id=node_id,
        inter_broker_listener_name=config.inter_broker_listener_name,
        security_inter_broker_protocol=config.security_inter_broker_protocol,
        unclean_leader_election_enable=config.unclean_leader_election_enable,
        auto_leader_rebalance_enable=config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_seconds=float(config.leader_imbalance_check_interval_seconds),
        leader_imbalance_per_broker_percentage=config.leader_imbalance_per_broker_percentage,
        inter_broker_security=security,
        inter_broker_versions=InterBrokerVersions.at(config.inter_broker_protocol_version),
        connect_timeout_s=config.controller_socket_timeout_ms / 1000,
        request_timeout_s=config.request_timeout_ms / 1000,
    )
