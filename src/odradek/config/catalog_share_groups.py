"""Broker configs of share groups (KIP-932) in the group coordinator: their sessions, heartbeats, record
locks, delivery counts and sizes, and the bounds of the GROUP configs that override them. Names and
defaults are Kafka 4.4's GroupCoordinatorConfig/ShareGroupConfig. Served unless "share" is left out of
group.coordinator.rebalance.protocols."""

from __future__ import annotations

from odradek.config.types import ConfigKey, ConfigType, Importance
from odradek.config.validators import at_least, between

MEDIUM = Importance.MEDIUM

SHARE_GROUP_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "group.share.session.timeout.ms",
        ConfigType.INT,
        45000,
        MEDIUM,
        "Session timeout of share-group members: one silent longer is removed from its group.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.min.session.timeout.ms",
        ConfigType.INT,
        45000,
        MEDIUM,
        "Shortest session timeout a share group may be configured with.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.max.session.timeout.ms",
        ConfigType.INT,
        60000,
        MEDIUM,
        "Longest session timeout a share group may be configured with.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.heartbeat.interval.ms",
        ConfigType.INT,
        5000,
        MEDIUM,
        "Heartbeat interval the coordinator gives share-group members.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.min.heartbeat.interval.ms",
        ConfigType.INT,
        5000,
        MEDIUM,
        "Shortest heartbeat interval a share group may be configured with.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.max.heartbeat.interval.ms",
        ConfigType.INT,
        15000,
        MEDIUM,
        "Longest heartbeat interval a share group may be configured with.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.record.lock.duration.ms",
        ConfigType.INT,
        30000,
        MEDIUM,
        "How long a share-group member holds the records a ShareFetch acquired for it before they are "
        "released for others.",
        between(1000, 3_600_000),
    ),
    ConfigKey(
        "group.share.min.record.lock.duration.ms",
        ConfigType.INT,
        15000,
        MEDIUM,
        "Shortest record lock a share group may be configured with.",
        between(1000, 30000),
    ),
    ConfigKey(
        "group.share.max.record.lock.duration.ms",
        ConfigType.INT,
        60000,
        MEDIUM,
        "Longest record lock a share group may be configured with.",
        between(30000, 3_600_000),
    ),
    ConfigKey(
        "group.share.delivery.count.limit",
        ConfigType.INT,
        5,
        MEDIUM,
        "Deliveries of a record to share-group members before it is archived (never delivered again).",
        between(2, 10),
    ),
    ConfigKey(
        "group.share.min.delivery.count.limit",
        ConfigType.INT,
        2,
        MEDIUM,
        "Smallest delivery count limit a share group may be configured with.",
        between(2, 5),
    ),
    ConfigKey(
        "group.share.max.delivery.count.limit",
        ConfigType.INT,
        10,
        MEDIUM,
        "Largest delivery count limit a share group may be configured with.",
        between(5, 25),
    ),
    ConfigKey(
        "group.share.min.partition.max.record.locks",
        ConfigType.INT,
        100,
        MEDIUM,
        "Smallest record lock limit per share partition a share group may be configured with.",
        between(100, 2000),
    ),
    ConfigKey(
        "group.share.max.partition.max.record.locks",
        ConfigType.INT,
        4000,
        MEDIUM,
        "Largest record lock limit per share partition a share group may be configured with.",
        between(2000, 10000),
    ),
    ConfigKey(
        "group.share.partition.max.record.locks",
        ConfigType.INT,
        2000,
        MEDIUM,
        "Most records in flight (acquired, or between the share-partition start and end offsets) in one "
        "share partition.",
        between(100, 10000),
    ),
    ConfigKey(
        "group.share.max.share.sessions",
        ConfigType.INT,
        2000,
        MEDIUM,
        "Most share sessions a broker holds; one more gets SHARE_SESSION_LIMIT_REACHED.",
        at_least(1),
    ),
    ConfigKey(
        "group.share.max.size",
        ConfigType.INT,
        200,
        MEDIUM,
        "Most members of one share group.",
        between(1, 1000),
    ),
)
