"""Broker configs of the share coordinator (KIP-932): `__share_group_state`, where share groups' delivery
state outlives the leaders of the partitions they read. Names and defaults are Kafka 4.4's
ShareCoordinatorConfig."""

from __future__ import annotations

from odradek.config.catalog_coordinators import WHOLE_CLUSTER
from odradek.config.types import ConfigKey, ConfigType, Importance
from odradek.config.validators import at_least, between

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW

SHARE_COORDINATOR_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "share.coordinator.state.topic.num.partitions",
        ConfigType.INT,
        50,
        HIGH,
        "Partitions of __share_group_state; not to be changed once the topic exists.",
        at_least(1),
    ),
    ConfigKey(
        "share.coordinator.state.topic.replication.factor",
        ConfigType.SHORT,
        3,
        HIGH,
        "Replication factor of __share_group_state.",
        at_least(1),
        cluster_only=WHOLE_CLUSTER,
    ),
    ConfigKey(
        "share.coordinator.state.topic.min.isr",
        ConfigType.SHORT,
        2,
        HIGH,
        "min.insync.replicas of __share_group_state.",
        at_least(1),
        cluster_only=WHOLE_CLUSTER,
    ),
    ConfigKey(
        "share.coordinator.state.topic.segment.bytes",
        ConfigType.INT,
        100 * 1024 * 1024,
        HIGH,
        "Segment size of __share_group_state.",
        at_least(1),
    ),
    ConfigKey(
        "share.coordinator.state.topic.compression.codec",
        ConfigType.INT,
        0,
        HIGH,
        "Compression codec id of __share_group_state writes (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).",
        between(0, 4),
    ),
    ConfigKey(
        "share.coordinator.snapshot.update.records.per.snapshot",
        ConfigType.INT,
        500,
        MEDIUM,
        "How many ShareUpdate records a share partition's state gets before the next write is a whole "
        "ShareSnapshot again.",
        at_least(0),
    ),
    ConfigKey(
        "share.coordinator.write.timeout.ms",
        ConfigType.INT,
        5000,
        HIGH,
        "How long a share-state write waits for the in-sync replicas of its __share_group_state partition.",
        at_least(1),
    ),
    ConfigKey(
        "share.coordinator.load.buffer.size",
        ConfigType.INT,
        5 * 1024 * 1024,
        HIGH,
        "Read size when loading __share_group_state.",
        at_least(1),
    ),
    ConfigKey(
        "share.coordinator.threads",
        ConfigType.INT,
        1,
        MEDIUM,
        "Threads of the share coordinator.",
        at_least(1),
        inert="the share coordinator runs on the broker's event loop, as the other coordinators do.",
    ),
    ConfigKey(
        "share.coordinator.append.linger.ms",
        ConfigType.INT,
        -1,
        MEDIUM,
        "How long a share-state write may wait for others to be appended in the same batch (-1: no wait).",
        at_least(-1),
        refused="each share-state write is appended on its own as soon as it is made.",
    ),
    ConfigKey(
        "share.coordinator.state.topic.prune.interval.ms",
        ConfigType.INT,
        5 * 60 * 1000,
        MEDIUM,
        "How often records of __share_group_state no state needs any more are deleted (up to the oldest "
        "state's newest snapshot).",
        at_least(1),
    ),
    ConfigKey(
        "share.coordinator.cold.partition.snapshot.interval.ms",
        ConfigType.INT,
        5 * 60 * 1000,
        MEDIUM,
        "How often states whose newest snapshot is that old get a new one (so pruning can pass them).",
        at_least(1),
    ),
    ConfigKey(
        "share.coordinator.cached.buffer.max.bytes",
        ConfigType.INT,
        1048588,
        LOW,
        "Largest write buffer the share coordinator keeps cached between appends.",
        at_least(1),
        refused="odradek's coordinators build each append's buffer anew.",
    ),
)
