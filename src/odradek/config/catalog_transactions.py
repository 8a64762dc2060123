"""Broker configs of the transaction coordinator (``__transaction_state``, KIP-98, KIP-890, KIP-939) and
of producer ids' expiration."""

from __future__ import annotations

from odradek.config.catalog_coordinators import MINUTE_MS, WHOLE_CLUSTER
from odradek.config.types import ConfigKey, ConfigType, DynamicUpdateMode, Importance
from odradek.config.validators import at_least

HIGH, LOW = Importance.HIGH, Importance.LOW
CLUSTER_WIDE = DynamicUpdateMode.CLUSTER_WIDE

TRANSACTION_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "transaction.max.timeout.ms",
        ConfigType.INT,
        15 * MINUTE_MS,
        HIGH,
        "Longest transaction timeout a producer may ask for.",
        at_least(1),
    ),
    ConfigKey(
        "transactional.id.expiration.ms",
        ConfigType.INT,
        7 * 24 * 60 * MINUTE_MS,
        HIGH,
        "A transactional id unused for this long is forgotten.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        ConfigType.INT,
        10_000,
        LOW,
        "How often timed-out transactions are rolled back.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        ConfigType.INT,
        60 * MINUTE_MS,
        LOW,
        "How often expired transactional ids are removed.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.num.partitions",
        ConfigType.INT,
        50,
        HIGH,
        "Partitions of __transaction_state; not to be changed once the topic exists.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.segment.bytes",
        ConfigType.INT,
        100 * 1024 * 1024,
        HIGH,
        "Segment size of __transaction_state.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.state.log.replication.factor",
        ConfigType.SHORT,
        3,
        HIGH,
        "Replication factor of __transaction_state.",
        at_least(1),
        cluster_only=WHOLE_CLUSTER,
    ),
    ConfigKey(
        "transaction.state.log.min.isr",
        ConfigType.INT,
        2,
        HIGH,
        "min.insync.replicas of __transaction_state.",
        at_least(1),
        cluster_only=WHOLE_CLUSTER,
    ),
    ConfigKey(
        "transaction.state.log.load.buffer.size",
        ConfigType.INT,
        5 * 1024 * 1024,
        HIGH,
        "Read size when loading __transaction_state.",
        at_least(1),
    ),
    ConfigKey(
        "transaction.two.phase.commit.enable",
        ConfigType.BOOLEAN,
        False,
        LOW,
        "Allow producers to take part in two-phase commit (KIP-939): InitProducerId with enable2Pc, "
        "whose transactions are never aborted by a timeout.",
    ),
    ConfigKey(
        "transaction.partition.verification.enable",
        ConfigType.BOOLEAN,
        True,
        LOW,
        "Check that a partition was added to the transaction before accepting transactional data.",
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "producer.id.expiration.ms",
        ConfigType.INT,
        24 * 60 * MINUTE_MS,
        LOW,
        "Producer-id state with no writes for this long is dropped.",
        at_least(1),
        dynamic=CLUSTER_WIDE,
    ),
    ConfigKey(
        "producer.id.expiration.check.interval.ms",
        ConfigType.INT,
        10 * MINUTE_MS,
        LOW,
        "How often expired producer ids are looked for.",
        at_least(1),
    ),
)
