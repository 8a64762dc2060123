"""Broker configs about the broker's identity and cluster: broker/node id, rack, cluster id
(odradek-specific, for single-node mode), the inter-broker protocol, replication, leader balance and
controlled shutdown (ZooKeeper's own: catalog_zookeeper.py).
"""

from __future__ import annotations

import base64
import re
import uuid

from odradek.config.inter_broker_protocol import INTER_BROKER_PROTOCOL, LATEST
from odradek.config.types import ConfigKey, ConfigType, ConfigValue, DynamicUpdateMode, Importance
from odradek.config.validators import SOCKET_BUFFER_BYTES, Check, at_least

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
CLUSTER_WIDE = DynamicUpdateMode.CLUSTER_WIDE
#: Why a replication or leadership setting does nothing without zookeeper.connect.
NOTHING_REPLICATES = "a single node leads every partition and has no replicas to fetch for."
NO_CONTROLLER = "a single node has no controller and no other broker to move leaderships to."
#: Kafka's replica selectors (KIP-392): the leader only, or a same-rack in-sync replica for a client that
#: names its rack. Empty (Kafka's default, null) selects no preferred read replica, as LeaderSelector.
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
REPLICA_SELECTOR_CLASS_NAMES = (LEADER_SELECTOR, RACK_AWARE_SELECTOR)
NO_WAITING_LIST_PURGE = "odradek drops a waiting request from its list as soon as it completes."


def is_cluster_id(value: ConfigValue) -> bool:
    """Kafka's cluster ids are 16 random bytes in URL-safe base64 without padding (22 characters)."""
    return isinstance(value, str) and _CLUSTER_ID.fullmatch(value) is not None


def generate_cluster_id() -> str:
    """A new cluster id in Kafka's format; like Kafka, never one starting with '-' (it reads as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


_CLUSTER_ID = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")

CLUSTER_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "broker.id",
        ConfigType.INT,
        -1,
        HIGH,
        "This broker's id; when both broker.id and node.id are set they must be equal.",
    ),
    ConfigKey(
        "node.id",
        ConfigType.INT,
        -1,
        HIGH,
        "KRaft's name for the broker id; when both are set they must be equal, when one is set it is "
        "used for both.",
    ),
    ConfigKey(
        "broker.id.generation.enable",
        ConfigType.BOOLEAN,
        True,
        MEDIUM,
        "Let a broker with no node.id configured or stored take one (odradek: 1, on a single node; a "
        "cluster member, which Kafka gives a unique id from ZooKeeper, refuses to start); when false, "
        "such a broker refuses to start.",
    ),
    ConfigKey(
        "reserved.broker.max.id",
        ConfigType.INT,
        1000,
        MEDIUM,
        "Highest id a configured broker.id may have in a cluster while broker.id.generation.enable is "
        "true (Kafka's generated ids start above it; odradek generates none in a cluster, where a broker "
        "needs its broker.id).",
        at_least(0),
        cluster_only="a single node runs as any node.id it is given, or 1.",
    ),
    ConfigKey(
        "broker.rack",
        ConfigType.STRING,
        None,
        MEDIUM,
        "Rack of the broker, reported to clients in Metadata and DescribeCluster.",
    ),
    ConfigKey(
        "cluster.id",
        ConfigType.STRING,
        None,
        MEDIUM,
        "Cluster id (22 characters of URL-safe base64); if unset, one is generated on first start and "
        "kept in meta.properties. In a cluster it is ZooKeeper's /cluster/id (the first broker writes "
        "this one there); a broker configured with another one refuses to start.",
        Check(is_cluster_id, "22-character URL-safe base64 of 16 bytes", "Not a valid cluster id"),
        odradek_specific=True,
    ),
    ConfigKey(
        "num.replica.alter.log.dirs.threads",
        ConfigType.INT,
        None,
        HIGH,
        "Threads moving replicas between log directories; defaults to the number of log directories.",
        inert="replicas do not move between log directories (AlterReplicaLogDirs is not served).",
    ),
    ConfigKey(
        "delete.topic.enable",
        ConfigType.BOOLEAN,
        True,
        HIGH,
        "Allow DeleteTopics; when false it fails with TOPIC_DELETION_DISABLED.",
    ),
    ConfigKey(
        "controlled.shutdown.enable",
        ConfigType.BOOLEAN,
        True,
        MEDIUM,
        "Move leadership away before shutting down.",
        cluster_only=NO_CONTROLLER,
    ),
    ConfigKey(
        "controlled.shutdown.max.retries",
        ConfigType.INT,
        3,
        MEDIUM,
        "Attempts of a controlled shutdown before shutting down anyway.",
        cluster_only=NO_CONTROLLER,
    ),
    ConfigKey(
        "controlled.shutdown.retry.backoff.ms",
        ConfigType.LONG,
        5000,
        MEDIUM,
        "Pause between controlled-shutdown attempts.",
        cluster_only=NO_CONTROLLER,
    ),
    ConfigKey(
        "inter.broker.protocol.version",
        ConfigType.STRING,
        LATEST,
        MEDIUM,
        "The request versions brokers use with each other (LeaderAndIsr, UpdateMetadata, StopReplica, "
        "Fetch, ListOffsets, AlterPartition), as Kafka's brokers at that version; lower it while a "
        "cluster is upgraded from older brokers.",
        INTER_BROKER_PROTOCOL,
        cluster_only="a single node has no other broker to speak to (the version is still checked).",
    ),
    ConfigKey(
        "default.replication.factor",
        ConfigType.INT,
        1,
        MEDIUM,
        "Replication factor of topics created without one.",
    ),
    ConfigKey(
        "replica.lag.time.max.ms",
        ConfigType.LONG,
        30000,
        HIGH,
        "A follower that has not caught up for this long leaves the ISR.",
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.selector.class",
        ConfigType.CLASS,
        None,
        MEDIUM,
        "Which replica a consumer that sends its client.rack is told to fetch from (KIP-392): "
        "RackAwareReplicaSelector picks an in-sync replica in the consumer's rack; LeaderSelector or "
        "unset keeps consumers on the leader.",
        Check(
            lambda value: value in ("", *REPLICA_SELECTOR_CLASS_NAMES),
            f"empty or one of {', '.join(REPLICA_SELECTOR_CLASS_NAMES)}",
            "odradek cannot load Java classes; set " + " or ".join(REPLICA_SELECTOR_CLASS_NAMES),
        ),
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.socket.timeout.ms",
        ConfigType.INT,
        30000,
        HIGH,
        "Socket timeout of replica fetchers.",
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.socket.receive.buffer.bytes",
        ConfigType.INT,
        64 * 1024,
        HIGH,
        "SO_RCVBUF of replica fetcher sockets; -1 keeps the OS default.",
        SOCKET_BUFFER_BYTES,
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.fetch.max.bytes",
        ConfigType.INT,
        1024 * 1024,
        MEDIUM,
        "Bytes a follower asks for per partition.",
        at_least(0),
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.fetch.wait.max.ms",
        ConfigType.INT,
        500,
        HIGH,
        "How long a follower's fetch may wait for data; below replica.lag.time.max.ms.",
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.fetch.min.bytes",
        ConfigType.INT,
        1,
        HIGH,
        "Bytes a follower's fetch waits for.",
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.fetch.backoff.ms",
        ConfigType.INT,
        1000,
        MEDIUM,
        "Pause after a failed replica fetch.",
        at_least(0),
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.fetch.response.max.bytes",
        ConfigType.INT,
        10 * 1024 * 1024,
        MEDIUM,
        "Most bytes of one replica Fetch response.",
        at_least(0),
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "num.replica.fetchers",
        ConfigType.INT,
        1,
        HIGH,
        "Fetcher tasks per source broker.",
        dynamic=CLUSTER_WIDE,
        cluster_only=NOTHING_REPLICATES,
    ),
    ConfigKey(
        "replica.high.watermark.checkpoint.interval.ms",
        ConfigType.LONG,
        5000,
        HIGH,
        "How often high watermarks are checkpointed to disk.",
        cluster_only=(
            "a single node's high watermark is its log end offset, checkpointed with the recovery "
            "points every log.flush.offset.checkpoint.interval.ms."
        ),
    ),
    ConfigKey(
        "fetch.purgatory.purge.interval.requests",
        ConfigType.INT,
        1000,
        MEDIUM,
        "Purge interval of the delayed-fetch waiting list, in requests.",
        inert=NO_WAITING_LIST_PURGE,
    ),
    ConfigKey(
        "producer.purgatory.purge.interval.requests",
        ConfigType.INT,
        1000,
        MEDIUM,
        "Purge interval of the delayed-produce waiting list, in requests.",
        inert=NO_WAITING_LIST_PURGE,
    ),
    ConfigKey(
        "delete.records.purgatory.purge.interval.requests",
        ConfigType.INT,
        1,
        MEDIUM,
        "Purge interval of the delayed-DeleteRecords waiting list, in requests.",
        inert=NO_WAITING_LIST_PURGE,
    ),
    ConfigKey(
        "auto.leader.rebalance.enable",
        ConfigType.BOOLEAN,
        True,
        HIGH,
        "Move leadership back to preferred replicas in the background.",
        cluster_only=NO_CONTROLLER,
    ),
    ConfigKey(
        "leader.imbalance.per.broker.percentage",
        ConfigType.INT,
        10,
        HIGH,
        "Imbalance per broker, in percent, that triggers a leader rebalance.",
        cluster_only=NO_CONTROLLER,
    ),
    ConfigKey(
        "leader.imbalance.check.interval.seconds",
        ConfigType.LONG,
        300,
        HIGH,
        "How often the controller checks leader balance.",
        at_least(1),
        cluster_only=NO_CONTROLLER,
    ),
    ConfigKey(
        "controller.socket.timeout.ms",
        ConfigType.INT,
        30000,
        MEDIUM,
        "How long the controller waits for a connection to a broker (request.timeout.ms bounds the "
        "broker's answer), a broker for the controller to answer its AlterPartition, before "
        "connecting again and resending, and a broker in controlled shutdown for its connection to "
        "the controller (request.timeout.ms bounds the answer).",
        cluster_only=NO_CONTROLLER,
    ),
)
