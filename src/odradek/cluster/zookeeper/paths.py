"""The znode paths of Kafka 3.9's ZooKeeper mode (kafka/zk/ZkData.scala), relative to the chroot."""

from __future__ import annotations

from typing import Final

CLUSTER_ID: Final = "/cluster/id"
BROKER_IDS: Final = "/brokers/ids"
TOPICS: Final = "/brokers/topics"
BROKER_SEQUENCE_ID: Final = "/brokers/seqid"
CONTROLLER: Final = "/controller"
CONTROLLER_EPOCH: Final = "/controller_epoch"
CONFIG: Final = "/config"
CONFIG_CHANGES: Final = "/config/changes"
#: The prefix of the sequential znodes under /config/changes (ZooKeeper appends a 10-digit number).
CONFIG_CHANGE_PREFIX: Final = "config_change_"
DELETE_TOPICS: Final = "/admin/delete_topics"
#: Reassignments asked for by writing a plan (kafka-reassign-partitions before KIP-455; still read).
REASSIGN_PARTITIONS: Final = "/admin/reassign_partitions"
LATEST_PRODUCER_ID_BLOCK: Final = "/latest_producer_id_block"
#: The finalized features (KIP-584) the controller keeps (kafka/zk/ZkData.scala FeatureZNode).
FEATURE: Final = "/feature"
ISR_CHANGE_NOTIFICATION: Final = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION: Final = "/log_dir_event_notification"
#: The old consumers' root, which Kafka still creates at start.
CONSUMERS: Final = "/consumers"

#: Config entity types (ConfigType.ALL): each has /config/<type>/<name> znodes.
TOPIC_CONFIG: Final = "topics"
CLIENT_CONFIG: Final = "clients"
USER_CONFIG: Final = "users"
BROKER_CONFIG: Final = "brokers"
IP_CONFIG: Final = "ips"
CONFIG_ENTITY_TYPES: Final = (TOPIC_CONFIG, CLIENT_CONFIG, USER_CONFIG, BROKER_CONFIG, IP_CONFIG)
#: The entity name of cluster-wide defaults (/config/brokers/<default>).
DEFAULT_ENTITY: Final = "<default>"

#: The persistent znodes a Kafka broker makes sure exist at start (ZkData.PersistentZkPaths), created
#: with no data.
PERSISTENT_PATHS: Final = (
    CONSUMERS,
    BROKER_IDS,
    TOPICS,
    CONFIG_CHANGES,
    DELETE_TOPICS,
    BROKER_SEQUENCE_ID,
    ISR_CHANGE_NOTIFICATION,
    LATEST_PRODUCER_ID_BLOCK,
    LOG_DIR_EVENT_NOTIFICATION,
    *(f"{CONFIG}/{entity_type}" for entity_type in CONFIG_ENTITY_TYPES),
)


def broker(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic(topic_name: str) -> str:
    return f"{TOPICS}/{topic_name}"


def topic_partitions(topic_name: str) -> str:
    return f"{TOPICS}/{topic_name}/partitions"


def topic_partition(topic_name: str, partition: int) -> str:
    return f"{TOPICS}/{topic_name}/partitions/{partition}"


def partition_state(topic_name: str, partition: int) -> str:
    return f"{TOPICS}/{topic_name}/partitions/{partition}/state"


def config_entity_type(entity_type: str) -> str:
    return f"{CONFIG}/{entity_type}"


def config_entity(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG}/{entity_type}/{entity_name}"


def delete_topic_marker(topic_name: str) -> str:
    return f"{DELETE_TOPICS}/{topic_name}"


def config_change_sequence(znode_name: str) -> int:
    """The sequence number of a /config/changes child (`config_change_0000000042` → 42)."""
    if not znode_name.startswith(CONFIG_CHANGE_PREFIX):
        raise ValueError(f"{znode_name!r} is not a config change notification znode")
    return int(znode_name[len(CONFIG_CHANGE_PREFIX) :])
