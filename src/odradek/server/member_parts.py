"""A ZooKeeper cluster member's parts that a single node has none of, as server/wiring.py builds them
and server/membership.py starts them."""

from __future__ import annotations

from dataclasses import dataclass

from odradek.cluster.controller.controller import KafkaController
from odradek.cluster.metadata.acls import ZkAclStore
from odradek.cluster.metadata.broker_configs import ZkBrokerConfigs
from odradek.cluster.metadata.delegation_tokens import ZkTokenStore
from odradek.cluster.metadata.scram_credentials import ZkScramCredentialStore
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.alter_partition import AlterPartitionManager


@dataclass(frozen=True)
class ZooKeeperParts:
    """A cluster member's parts that only it has, as their own types."""

    #: The control half of its replica manager (LeaderAndIsr, StopReplica, UpdateMetadata).
    control: ReplicaManager
    #: Its dynamic broker configs in ZooKeeper (/config/brokers).
    broker_configs: ZkBrokerConfigs
    credentials: ZkScramCredentialStore
    token_store: ZkTokenStore
    acl_store: ZkAclStore
    controller: KafkaController  # started once the broker is registered, as is
    alter_partition: AlterPartitionManager  # its leaders' sender of ISR changes
    topic_configs: TopicConfigSync  # followed in ZooKeeper (/config/topics, /config/changes)
