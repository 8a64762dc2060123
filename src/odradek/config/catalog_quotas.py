"""Broker configs of quotas: the windows client quotas are measured over (odradek.security.client_quotas).

Client quotas are built (user / client-id byte rates and request percentages, set with
AlterClientQuotas): their window settings are read once at start-up, as Kafka reads them. So are
replication quotas and the alter-log-dirs quota on moves between log directories
(cluster/replication/replication_quota.py): their windows are read at start-up, their rates at every
check (per broker over the cluster-wide default). Controller mutation quotas and custom quota callbacks
are not built: their settings are refused unless left at their default.
"""

from __future__ import annotations

from odradek.config.types import LONG_MAX, ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import at_least

LOW = Importance.LOW
MEDIUM = Importance.MEDIUM
SINGLE_NODE = "a single node has no followers: nothing replicates, so nothing is throttled."
CONTROLLER = "controller mutation quotas (KIP-599) are not built in odradek."
CALLBACK = "odradek cannot load Java classes: quotas follow Kafka's default user/client-id precedence."

QUOTA_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "quota.window.num",
        ConfigType.INT,
        11,
        LOW,
        "Samples kept in memory for client quotas: a client's rate is measured over this many windows.",
        at_least(1),
    ),
    ConfigKey(
        "quota.window.size.seconds",
        ConfigType.INT,
        1,
        LOW,
        "Length of one client quota sample window, in seconds (also the longest request-quota throttle).",
        at_least(1),
    ),
    ConfigKey(
        "replication.quota.window.num",
        ConfigType.INT,
        11,
        LOW,
        "Samples kept in memory for replication quotas.",
        at_least(1),
        cluster_only=SINGLE_NODE,
    ),
    ConfigKey(
        "replication.quota.window.size.seconds",
        ConfigType.INT,
        1,
        LOW,
        "Length of one replication quota sample window, in seconds.",
        at_least(1),
        cluster_only=SINGLE_NODE,
    ),
    ConfigKey(
        "alter.log.dirs.replication.quota.window.num",
        ConfigType.INT,
        11,
        LOW,
        "Samples kept in memory for alter-log-dirs replication quotas.",
        at_least(1),
    ),
    ConfigKey(
        "alter.log.dirs.replication.quota.window.size.seconds",
        ConfigType.INT,
        1,
        LOW,
        "Length of one alter-log-dirs replication quota sample window, in seconds.",
        at_least(1),
    ),
    ConfigKey(
        "controller.quota.window.num",
        ConfigType.INT,
        11,
        LOW,
        "Samples kept in memory for controller mutation quotas.",
        at_least(1),
        refused=CONTROLLER,
    ),
    ConfigKey(
        "controller.quota.window.size.seconds",
        ConfigType.INT,
        1,
        LOW,
        "Length of one controller mutation quota sample window, in seconds.",
        at_least(1),
        refused=CONTROLLER,
    ),
    ConfigKey(
        "client.quota.callback.class",
        ConfigType.CLASS,
        None,
        LOW,
        "A ClientQuotaCallback class replacing the default user/client-id quota lookup.",
        refused=CALLBACK,
    ),
    # Kafka's broker-level replication throttles (DynamicConfig.Broker), set per broker or as the
    # cluster default: kafka-reassign-partitions --throttle sets them, --verify and --cancel delete them.
    # Kafka 3.9 knows them only as dynamic configs (one in server.properties is "not a known config",
    # ignored); odradek honours one there too, as the lowest layer, since a setting it accepts acts.
    ConfigKey(
        "leader.replication.throttled.rate",
        ConfigType.LONG,
        LONG_MAX,
        MEDIUM,
        "Bytes per second leaders may send of the replicas named in a topic's "
        "leader.replication.throttled.replicas.",
        at_least(0),
        dynamic=DynamicUpdateMode.CLUSTER_WIDE,
        cluster_only=SINGLE_NODE,
        dynamic_only=True,
    ),
    ConfigKey(
        "follower.replication.throttled.rate",
        ConfigType.LONG,
        LONG_MAX,
        MEDIUM,
        "Bytes per second followers may fetch of the replicas named in a topic's "
        "follower.replication.throttled.replicas.",
        at_least(0),
        dynamic=DynamicUpdateMode.CLUSTER_WIDE,
        cluster_only=SINGLE_NODE,
        dynamic_only=True,
    ),
    ConfigKey(
        "replica.alter.log.dirs.io.max.bytes.per.second",
        ConfigType.LONG,
        LONG_MAX,
        MEDIUM,
        "Bytes per second the copies of replicas moving between log directories (AlterReplicaLogDirs) may "
        "make, all moves of the broker together.",
        at_least(0),
        dynamic=DynamicUpdateMode.CLUSTER_WIDE,
        dynamic_only=True,
    ),
)
