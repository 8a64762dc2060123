"""Broker configs of the group coordinator (classic groups and KIP-848 consumer groups) and committed
offsets (``__consumer_offsets``). Share groups' are ``catalog_share_groups.py``'s, transactions' and
producer ids' ``catalog_transactions.py``'s."""

from __future__ import annotations

from odradek.config.types import INT_MAX, ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import at_least, list_of, one_of

HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
CLUSTER_WIDE = DynamicUpdateMode.CLUSTER_WIDE
MINUTE_MS = 60 * 1000
#: Why a coordinator topic's replication settings do nothing without zookeeper.connect.
WHOLE_CLUSTER = (
    "a single node is the whole cluster: the topic gets one replica (and needs one in sync) "
    "whatever this says."
)
#: Why the bounds of consumer groups' GROUP configs bound nothing.
CONSUMER_GROUP_CONFIGS_REFUSED = "they bound consumer groups' GROUP configs, which odradek refuses yet."
WRITES_IN_THE_ISR = "a single node's writes are on its whole ISR (itself) as soon as they are appended."

GROUP_COORDINATOR_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "group.min.session.timeout.ms",
        ConfigType.INT,
        6000,
        MEDIUM,
        "Shortest session timeout a classic group member may ask for.",
    ),
    ConfigKey(
        "group.max.session.timeout.ms",
        ConfigType.INT,
        1_800_000,
        MEDIUM,
        "Longest session timeout a classic group member may ask for.",
    ),
    ConfigKey(
        "group.initial.rebalance.delay.ms",
        ConfigType.INT,
        3000,
        MEDIUM,
        "How long a new classic group waits for more members before its first rebalance.",
    ),
    ConfigKey(
        "group.max.size", ConfigType.INT, INT_MAX, MEDIUM, "Most members of one classic group.", at_least(1)
    ),
    ConfigKey(
        "group.coordinator.rebalance.protocols",
        ConfigType.LIST,
        # Kafka 4.4's default is classic,consumer,streams and it ignores 'share' here (share.version,
        # changed by kafka-features, is its switch). odradek has no feature store to change, so this
        # list stays its switch: 'share' is in the default, and leaving it out turns share groups off.
        ["classic", "consumer", "share"],
        MEDIUM,
        "Group protocols the coordinator serves: 'classic' (JoinGroup/SyncGroup), 'consumer' "
        "(KIP-848 ConsumerGroupHeartbeat) and 'share' (KIP-932 share groups, ShareGroupHeartbeat; "
        "share.version is finalized at 1 with it, 0 without).",
        list_of("classic", "consumer", "share", "streams"),
    ),
    ConfigKey(
        "group.coordinator.threads",
        ConfigType.INT,
        1,
        MEDIUM,
        "Threads of the group coordinator.",
        at_least(1),
        inert="the group coordinator runs on the broker's one event loop.",
    ),
    ConfigKey(
        "group.coordinator.append.linger.ms",
        ConfigType.INT,
        -1,
        MEDIUM,
        "How long the coordinator gathers records before writing them; -1 adapts to load.",
        at_least(-1),
        inert="the coordinator writes each result at once, without gathering.",
    ),
    ConfigKey(
        "group.consumer.session.timeout.ms",
        ConfigType.INT,
        45000,
        MEDIUM,
        "Session timeout of consumer-group (KIP-848) members.",
        at_least(1),
    ),
    ConfigKey(
        "group.consumer.min.session.timeout.ms",
        ConfigType.INT,
        45000,
        MEDIUM,
        "Shortest session timeout a consumer group may be configured with.",
        at_least(1),
        inert=CONSUMER_GROUP_CONFIGS_REFUSED,
    ),
    ConfigKey(
        "group.consumer.max.session.timeout.ms",
        ConfigType.INT,
        60000,
        MEDIUM,
        "Longest session timeout a consumer group may be configured with.",
        at_least(1),
        inert=CONSUMER_GROUP_CONFIGS_REFUSED,
    ),
    ConfigKey(
        "group.consumer.heartbeat.interval.ms",
        ConfigType.INT,
        5000,
        MEDIUM,
        "Heartbeat interval the coordinator gives consumer-group members.",
        at_least(1),
    ),
    ConfigKey(
        "group.consumer.min.heartbeat.interval.ms",
        ConfigType.INT,
        5000,
        MEDIUM,
        "Shortest heartbeat interval a consumer group may be configured with.",
        at_least(1),
        inert=CONSUMER_GROUP_CONFIGS_REFUSED,
    ),
    ConfigKey(
        "group.consumer.max.heartbeat.interval.ms",
        ConfigType.INT,
        15000,
        MEDIUM,
        "Longest heartbeat interval a consumer group may be configured with.",
        at_least(1),
        inert=CONSUMER_GROUP_CONFIGS_REFUSED,
    ),
    ConfigKey(
        "group.consumer.max.size",
        ConfigType.INT,
        INT_MAX,
        MEDIUM,
        "Most members of one consumer group.",
        at_least(1),
    ),
    ConfigKey(
        "group.consumer.assignors",
        ConfigType.LIST,
        ["uniform", "range"],
        MEDIUM,
        "Server-side assignors of consumer groups; the first is the default.",
    ),
    ConfigKey(
        "group.consumer.migration.policy",
        ConfigType.STRING,
        "bidirectional",
        MEDIUM,
        "Whether a classic group may turn into a consumer group (upgrade), back (downgrade), both or "
        "neither (disabled).",
        one_of("disabled", "downgrade", "upgrade", "bidirectional", case_sensitive=False),
        refused="odradek does not convert groups between the classic and consumer protocols yet.",
    ),
)

#: Committed offsets (``__consumer_offsets``).
OFFSETS_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "offset.metadata.max.bytes",
        ConfigType.INT,
        4096,
        HIGH,
        "Longest metadata string of a committed offset.",
    ),
    ConfigKey(
        "offsets.load.buffer.size",
        ConfigType.INT,
        5 * 1024 * 1024,
        HIGH,
        "Read size when loading __consumer_offsets into the cache.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.topic.replication.factor",
        ConfigType.SHORT,
        3,
        HIGH,
        "Replication factor of __consumer_offsets; creation waits until this many brokers are up.",
        at_least(1),
        cluster_only=WHOLE_CLUSTER,
    ),
    ConfigKey(
        "offsets.topic.num.partitions",
        ConfigType.INT,
        50,
        HIGH,
        "Partitions of __consumer_offsets; not to be changed once the topic exists.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.topic.segment.bytes",
        ConfigType.INT,
        100 * 1024 * 1024,
        HIGH,
        "Segment size of __consumer_offsets, kept small for fast compaction and loading.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.topic.compression.codec",
        ConfigType.INT,
        0,
        HIGH,
        "Compression codec id of __consumer_offsets writes (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).",
    ),
    ConfigKey(
        "offsets.retention.minutes",
        ConfigType.INT,
        7 * 24 * 60,
        HIGH,
        "How long a group's committed offsets are kept after it becomes empty.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.retention.check.interval.ms",
        ConfigType.LONG,
        600_000,
        HIGH,
        "How often stale offsets are looked for.",
        at_least(1),
    ),
    ConfigKey(
        "offsets.commit.timeout.ms",
        ConfigType.INT,
        5000,
        HIGH,
        "How long an offset commit waits for the write to __consumer_offsets.",
        at_least(1),
        cluster_only=WRITES_IN_THE_ISR,
    ),
    ConfigKey(
        "offsets.commit.required.acks",
        ConfigType.SHORT,
        -1,
        HIGH,
        "Acks an offset commit's write needs (Kafka 3.x; removed in 4.0).",
        refused="odradek's offset commits always wait for the whole ISR (-1).",
    ),
)
