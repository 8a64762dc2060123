"""GROUP config resources (KIP-848, KIP-932): per-group overrides of the broker's group settings, as
Kafka 4.4's GroupConfig has them (IncrementalAlterConfigs/DescribeConfigs on resource type GROUP,
`kafka-configs.sh --entity-type groups`).

odradek serves the share-group ones and a consumer group's session timeout and heartbeat interval.
Each is checked, as Kafka checks it when it is set, against the broker's bounds
(`group.share.min.*`/`max.*`, `group.consumer.min.*`/`max.*`), and a group's session timeout must stay
above its heartbeat interval, each taken from the group or, unset, from the broker. Kafka 4.4's other
group configs (streams groups, assignment intervals and offloaded assignors, dead-letter queues,
renewals) are refused by name: odradek does not act on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError, ConfigKey, ConfigType, ConfigValue, Importance
from odradek.config.validators import one_of

SESSION_TIMEOUT: Final = "share.session.timeout.ms"
HEARTBEAT_INTERVAL: Final = "share.heartbeat.interval.ms"
RECORD_LOCK_DURATION: Final = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT: Final = "share.delivery.count.limit"
PARTITION_MAX_RECORD_LOCKS: Final = "share.partition.max.record.locks"
AUTO_OFFSET_RESET: Final = "share.auto.offset.reset"
ISOLATION_LEVEL: Final = "share.isolation.level"
CONSUMER_SESSION_TIMEOUT: Final = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL: Final = "consumer.heartbeat.interval.ms"

_MEDIUM = Importance.MEDIUM
GROUP_CONFIGS: Final[Mapping[str, ConfigKey]] = {
    key.name: key
    for key in (
        ConfigKey(
            CONSUMER_SESSION_TIMEOUT,
            ConfigType.INT,
            45000,
            _MEDIUM,
            "The timeout to detect client failures when using the consumer group protocol.",
        ),
        ConfigKey(
            CONSUMER_HEARTBEAT_INTERVAL,
            ConfigType.INT,
            5000,
            _MEDIUM,
            "The heartbeat interval given to the members of a consumer group.",
        ),
        ConfigKey(
            SESSION_TIMEOUT,
            ConfigType.INT,
            45000,
            _MEDIUM,
            "The timeout to detect client failures when using the share group protocol.",
        ),
        ConfigKey(
            HEARTBEAT_INTERVAL,
            ConfigType.INT,
            5000,
            _MEDIUM,
            "The heartbeat interval given to the members of a share group.",
        ),
        ConfigKey(
            RECORD_LOCK_DURATION,
            ConfigType.INT,
            30000,
            _MEDIUM,
            "The record acquisition lock duration in milliseconds for share groups.",
        ),
        ConfigKey(
            DELIVERY_COUNT_LIMIT,
            ConfigType.INT,
            5,
            _MEDIUM,
            "The maximum number of delivery attempts for a record delivered to a share group.",
        ),
        ConfigKey(
            PARTITION_MAX_RECORD_LOCKS,
            ConfigType.INT,
            2000,
            _MEDIUM,
            "Share-group record lock limit per share-partition.",
        ),
        ConfigKey(
            AUTO_OFFSET_RESET,
            ConfigType.STRING,
            "latest",
            _MEDIUM,
            "Where a share group starts reading a partition it never read: 'earliest' (the log start "
            "offset) or 'latest' (the high watermark).",
            one_of("earliest", "latest"),
        ),
        ConfigKey(
            ISOLATION_LEVEL,
            ConfigType.STRING,
            "read_uncommitted",
            _MEDIUM,
            "Controls how to read records written transactionally: 'read_committed' delivers only "
            "committed transactional records, 'read_uncommitted' every record.",
            one_of("read_committed", "read_uncommitted"),
        ),
    )
}

_NO_DLQ = "odradek does not serve share-group dead-letter queues (share.version 2)."
#: Kafka 4.4's other group configs, refused by name with the reason.
NOT_SERVED: Final[Mapping[str, str]] = {
    "consumer.assignment.interval.ms": (
        "odradek assigns a consumer group at each heartbeat, not at an interval."
    ),
    "consumer.assignor.offload.enable": "odradek assigns on the group coordinator's event loop.",
    **{
        name: "odradek does not serve streams groups (KIP-1071)."
        for name in (
            "streams.session.timeout.ms",
            "streams.heartbeat.interval.ms",
            "streams.num.standby.replicas",
            "streams.initial.rebalance.delay.ms",
            "streams.assignment.interval.ms",
            "streams.rack.aware.assignment.tags",
            "streams.assignor.offload.enable",
            "streams.task.offset.interval.ms",
            "streams.num.warmup.replicas",
            "streams.acceptable.recovery.lag",
            "streams.assignor.name",
        )
    },
    "share.assignment.interval.ms": "odradek assigns a share group at each heartbeat, not at an interval.",
    "share.assignor.offload.enable": "odradek assigns on the group coordinator's event loop.",
    "share.renew.acknowledge.enable": "odradek does not serve renew acknowledgements (ShareFetch v2).",
    "errors.deadletterqueue.topic.name": _NO_DLQ,
    "errors.deadletterqueue.copy.record.enable": _NO_DLQ,
}


#: A group's stored GROUP configs by group id ({} for a group with none).
GroupConfigLookup = Callable[[str], Mapping[str, str]]


def no_group_configs(group_id: str) -> Mapping[str, str]:
    """The lookup where no GROUP config is kept."""
    return {}


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    """What a share group runs with: its GROUP configs where set, the broker's group.share.* else."""

    session_timeout_ms: int
    heartbeat_interval_ms: int
    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str
    read_committed: bool


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    """What a consumer group (KIP-848) runs with: its GROUP configs where set, the broker's
    group.consumer.* else."""

    session_timeout_ms: int
    heartbeat_interval_ms: int


def consumer_group_settings(configs: Mapping[str, str], broker: BrokerConfig) -> ConsumerGroupSettings:
    """The effective settings of a consumer group with these stored configs, capped to the broker's
    bounds as ``share_group_settings``."""
    b = broker
    return ConsumerGroupSettings(
        session_timeout_ms=_bounded(
            configs,
            CONSUMER_SESSION_TIMEOUT,
            b.group_consumer_session_timeout_ms,
            b.group_consumer_min_session_timeout_ms,
            b.group_consumer_max_session_timeout_ms,
        ),
        heartbeat_interval_ms=_bounded(
            configs,
            CONSUMER_HEARTBEAT_INTERVAL,
            b.group_consumer_heartbeat_interval_ms,
            b.group_consumer_min_heartbeat_interval_ms,
            b.group_consumer_max_heartbeat_interval_ms,
        ),
    )


def _bounded(configs: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A stored int config, or ``default`` unset; one the broker's bounds no longer allow (they were
    changed since) is capped to them, as Kafka 4.4's GroupConfig.evaluate caps it."""
    raw = configs.get(name)
    if raw is None or not raw.strip().lstrip("+-").isdigit():
        return default  # unset, or a stored value no check let through (a file edited by hand)
    return min(max(int(raw), low), high)


def share_group_settings(configs: Mapping[str, str], broker: BrokerConfig) -> ShareGroupSettings:
    """The effective settings of a share group with these stored configs. A stored value the broker's
    bounds no longer allow (they were changed since) is capped to them, as Kafka 4.4 caps it."""

    def bounded(name: str, default: int, low: int, high: int) -> int:
        return _bounded(configs, name, default, low, high)

    b = broker
    return ShareGroupSettings(
        session_timeout_ms=bounded(
            SESSION_TIMEOUT,
            b.group_share_session_timeout_ms,
            b.group_share_min_session_timeout_ms,
            b.group_share_max_session_timeout_ms,
        ),
        heartbeat_interval_ms=bounded(
            HEARTBEAT_INTERVAL,
            b.group_share_heartbeat_interval_ms,
            b.group_share_min_heartbeat_interval_ms,
            b.group_share_max_heartbeat_interval_ms,
        ),
        record_lock_duration_ms=bounded(
            RECORD_LOCK_DURATION,
            b.group_share_record_lock_duration_ms,
            b.group_share_min_record_lock_duration_ms,
            b.group_share_max_record_lock_duration_ms,
        ),
        delivery_count_limit=bounded(
            DELIVERY_COUNT_LIMIT,
            b.group_share_delivery_count_limit,
            b.group_share_min_delivery_count_limit,
            b.group_share_max_delivery_count_limit,
        ),
        partition_max_record_locks=bounded(
            PARTITION_MAX_RECORD_LOCKS,
            b.group_share_partition_max_record_locks,
            b.group_share_min_partition_max_record_locks,
            b.group_share_max_partition_max_record_locks,
        ),
        auto_offset_reset=configs.get(AUTO_OFFSET_RESET, "latest"),
        read_committed=configs.get(ISOLATION_LEVEL) == "read_committed",
    )


def broker_group_defaults(broker: BrokerConfig) -> dict[str, str]:
    """What each group config is for a group that does not set it: the broker's value."""
    settings = share_group_settings({}, broker)
    consumer = consumer_group_settings({}, broker)
    return {
        CONSUMER_SESSION_TIMEOUT: str(consumer.session_timeout_ms),
        CONSUMER_HEARTBEAT_INTERVAL: str(consumer.heartbeat_interval_ms),
        SESSION_TIMEOUT: str(settings.session_timeout_ms),
        HEARTBEAT_INTERVAL: str(settings.heartbeat_interval_ms),
        RECORD_LOCK_DURATION: str(settings.record_lock_duration_ms),
        DELIVERY_COUNT_LIMIT: str(settings.delivery_count_limit),
        PARTITION_MAX_RECORD_LOCKS: str(settings.partition_max_record_locks),
        AUTO_OFFSET_RESET: settings.auto_offset_reset,
        ISOLATION_LEVEL: "read_committed" if settings.read_committed else "read_uncommitted",
    }


def validate_group_configs(configs: Mapping[str, str], broker: BrokerConfig) -> dict[str, ConfigValue]:
    """The typed values of a group's configs; raises ConfigError (naming the config) as Kafka's
    GroupConfig.validate refuses them."""
    values: dict[str, ConfigValue] = {}
    for name, raw in configs.items():
        key = GROUP_CONFIGS.get(name)
        if key is None:
            reason = NOT_SERVED.get(name)
            if reason is not None:
                raise ConfigError(f"odradek cannot honour {name}: {reason}", name)
            raise ConfigError(f"Unknown group config name: {name}", name)
        values[name] = key.parse(raw)
    for name, low, high in _bounds(broker):
        value = values.get(name)
        if isinstance(value, int) and not low <= value <= high:
            raise ConfigError(f"{name} must be in the range {low} to {high} inclusive.", name)
    for session_name, session_default, heartbeat_name, heartbeat_default in (
        (
            CONSUMER_SESSION_TIMEOUT,
            broker.group_consumer_session_timeout_ms,
            CONSUMER_HEARTBEAT_INTERVAL,
            broker.group_consumer_heartbeat_interval_ms,
        ),
        (
            SESSION_TIMEOUT,
            broker.group_share_session_timeout_ms,
            HEARTBEAT_INTERVAL,
            broker.group_share_heartbeat_interval_ms,
        ),
    ):
        session = values.get(session_name, session_default)
        heartbeat = values.get(heartbeat_name, heartbeat_default)
        if (session_name in values or heartbeat_name in values) and not _greater(session, heartbeat):
            raise ConfigError(f"{session_name} must be greater than {heartbeat_name}", session_name)
    return values


def _bounds(broker: BrokerConfig) -> list[tuple[str, int, int]]:
    return [
        (
            CONSUMER_HEARTBEAT_INTERVAL,
            broker.group_consumer_min_heartbeat_interval_ms,
            broker.group_consumer_max_heartbeat_interval_ms,
        ),
        (
            CONSUMER_SESSION_TIMEOUT,
            broker.group_consumer_min_session_timeout_ms,
            broker.group_consumer_max_session_timeout_ms,
        ),
        (
            HEARTBEAT_INTERVAL,
            broker.group_share_min_heartbeat_interval_ms,
            broker.group_share_max_heartbeat_interval_ms,
        ),
        (
            SESSION_TIMEOUT,
            broker.group_share_min_session_timeout_ms,
            broker.group_share_max_session_timeout_ms,
        ),
        (
            RECORD_LOCK_DURATION,
            broker.group_share_min_record_lock_duration_ms,
            broker.group_share_max_record_lock_duration_ms,
        ),
        (
            DELIVERY_COUNT_LIMIT,
            broker.group_share_min_delivery_count_limit,
            broker.group_share_max_delivery_count_limit,
        ),
        (
            PARTITION_MAX_RECORD_LOCKS,
            broker.group_share_min_partition_max_record_locks,
            broker.group_share_max_partition_max_record_locks,
        ),
    ]


def _greater(session: ConfigValue, heartbeat: ConfigValue) -> bool:
    return isinstance(session, int) and isinstance(heartbeat, int) and session > heartbeat
