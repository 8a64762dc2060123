"""Broker configs of the log cleaner, which compacts topics whose cleanup.policy includes 'compact'.

The ratio, lag and tombstone-retention configs are the broker-wide defaults of topic configs and so
can change at run time cluster-wide, like the cleaner's thread and buffer settings (Kafka's LogCleaner).
"""

from __future__ import annotations

from odradek.config.types import DOUBLE_MAX, LONG_MAX, ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import at_least, between

MEDIUM = Importance.MEDIUM
CLUSTER_WIDE = DynamicUpdateMode.CLUSTER_WIDE
UNBOUNDED = "odradek's cleaner does not bound its memory or I/O rate yet."

CLEANER_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "log.cleaner.enable",
        ConfigType.BOOLEAN,
        True,
        MEDIUM,
        "Run the log cleaner; when false, no topic is compacted.",
    ),
    ConfigKey(
        "log.cleaner.threads",
        ConfigType.INT,
        1,
        MEDIUM,
        "Threads compacting logs.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
        inert=(
            "odradek compacts one log at a time in a worker thread; 0 threads does not stop it "
            "(log.cleaner.enable does)."
        ),
    ),
    ConfigKey(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        DOUBLE_MAX,
        MEDIUM,
        "Read plus write rate the cleaner may use, in bytes per second.",
        dynamic=CLUSTER_WIDE,
        refused=UNBOUNDED,
    ),
    ConfigKey(
        "log.cleaner.dedupe.buffer.size",
        ConfigType.LONG,
        128 * 1024 * 1024,
        MEDIUM,
        "Memory for the cleaner's key map, across all cleaner threads.",
        dynamic=CLUSTER_WIDE,
        refused=UNBOUNDED,
    ),
    ConfigKey(
        "log.cleaner.io.buffer.size",
        ConfigType.INT,
        512 * 1024,
        MEDIUM,
        "Memory for the cleaner's read and write buffers, across all cleaner threads.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
        refused=UNBOUNDED,
    ),
    ConfigKey(
        "log.cleaner.io.buffer.load.factor",
        ConfigType.DOUBLE,
        0.9,
        MEDIUM,
        "How full the cleaner's key map may get.",
        dynamic=CLUSTER_WIDE,
        refused=UNBOUNDED,
    ),
    ConfigKey(
        "log.cleaner.backoff.ms",
        ConfigType.LONG,
        15000,
        MEDIUM,
        "How long the cleaner sleeps when there is nothing to clean.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "log.cleaner.min.cleanable.ratio",
        ConfigType.DOUBLE,
        0.5,
        MEDIUM,
        "Default min.cleanable.dirty.ratio.",
        between(0, 1),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "log.cleaner.delete.retention.ms",
        ConfigType.LONG,
        24 * 3_600_000,
        MEDIUM,
        "Default delete.retention.ms.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "log.cleaner.min.compaction.lag.ms",
        ConfigType.LONG,
        0,
        MEDIUM,
        "Default min.compaction.lag.ms.",
        at_least(0),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "log.cleaner.max.compaction.lag.ms",
        ConfigType.LONG,
        LONG_MAX,
        MEDIUM,
        "Default max.compaction.lag.ms.",
        at_least(1),
        dynamic=CLUSTER_WIDE,
    ),
)
