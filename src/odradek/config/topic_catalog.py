"""Every topic-level config, with Kafka's type, default and validation, and the broker configs
that supply each one's default (its synonyms, highest priority first).

Defaults and limits are Apache Kafka 4.x's (e.g. ``segment.bytes`` at least 1 MiB and
``message.timestamp.after.max.ms`` one hour, both new in 4.0). ``message.downconversion.enable`` left
Kafka in 4.0 together with Fetch v0-3; odradek still serves those versions, so it keeps the config.
``message.format.version`` is Kafka 3.x's deprecated config, accepted with no effect as 3.x does.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.config.types import LONG_MAX, ConfigKey, ConfigType, Importance, Validator
from odradek.config.validators import (
    KAFKA_VERSION,
    THROTTLED_REPLICAS,
    RangeOrValue,
    at_least,
    between,
    list_of,
    one_of,
)
from odradek.protocol.records import COMPRESSION_TYPES

HOUR_MS = 60 * 60 * 1000
MINUTE_MS = 60 * 1000
WEEK_MS = 7 * 24 * HOUR_MS

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
NO_TIERED_STORAGE = "odradek has no tiered storage."
# Kafka 3.x: deprecated, and ignored from 3.0 on (every batch is written in format v2).
FORMAT_VERSION_DEFAULT = "3.0-IV1"
FORMAT_VERSION_IGNORED = "deprecated in Kafka 3.x and ignored from 3.0 on; odradek writes message format v2."
NO_ELECTION = "a single node leads every partition itself: there is no leader to elect."


@dataclass(frozen=True, slots=True)
class BrokerSynonym:
    """A broker config that gives a topic config its default; ``scale`` converts its unit to the topic's."""

    name: str
    scale: int = 1


def _topic(
    name: str,
    config_type: ConfigType,
    default: bool | int | float | str | list[str],
    doc: str,
    validator: Validator | None = None,
    importance: Importance = Importance.MEDIUM,
    *,
    refused: str = "",
    inert: str = "",
    cluster_only: str = "",
) -> ConfigKey:
    return ConfigKey(
        name,
        config_type,
        default,
        importance,
        doc,
        validator,
        refused=refused,
        inert=inert,
        cluster_only=cluster_only,
    )


TOPIC_CONFIG_KEYS: tuple[ConfigKey, ...] = (
    _topic(
        "cleanup.policy",
        ConfigType.LIST,
        ["delete"],
        "How old segments go: 'delete' drops them by retention time/size, 'compact' keeps the latest "
        "record per key; both may be given. An empty list keeps everything.",
        list_of(*CLEANUP_POLICIES),
    ),
    _topic(
        "compression.gzip.level",
        ConfigType.INT,
        -1,
        "Level used when compression.type is gzip.",
        RangeOrValue(1, 9, -1),
    ),
    _topic(
        "compression.lz4.level",
        ConfigType.INT,
        9,
        "Level used when compression.type is lz4.",
        between(1, 17),
    ),
    _topic(
        "compression.type",
        ConfigType.STRING,
        "producer",
        "Codec the log stores batches in; 'producer' keeps whatever the producer sent, "
        "'uncompressed' stores them without compression. A batch in another codec is rewritten in this "
        "one as it is appended.",
        one_of(*COMPRESSION_TYPES),
    ),
    _topic(
        "compression.zstd.level",
        ConfigType.INT,
        3,
        "Level used when compression.type is zstd.",
        between(-131072, 22),
    ),
    _topic(
        "delete.retention.ms",
        ConfigType.LONG,
        24 * HOUR_MS,
        "How long delete markers (tombstones) stay in a compacted log.",
        at_least(0),
    ),
    _topic(
        "file.delete.delay.ms",
        ConfigType.LONG,
        60000,
        "How long a deleted segment's files linger before they are removed from disk.",
        at_least(0),
    ),
    _topic(
        "flush.messages",
        ConfigType.LONG,
        LONG_MAX,
        "Force an fsync after this many messages have been appended.",
        at_least(1),
    ),
    _topic(
        "flush.ms",
        ConfigType.LONG,
        LONG_MAX,
        "Force an fsync when the oldest unflushed message is this old.",
        at_least(0),
    ),
    _topic(
        "follower.replication.throttled.replicas",
        ConfigType.LIST,
        [],
        "Replicas whose replication is throttled on the follower side, as PartitionId:BrokerId "
        "pairs, or '*' for all.",
        THROTTLED_REPLICAS,
    ),
    _topic(
        "index.interval.bytes",
        ConfigType.INT,
        4096,
        "Bytes of log between two entries of the offset index.",
        at_least(0),
    ),
    _topic(
        "leader.replication.throttled.replicas",
        ConfigType.LIST,
        [],
        "Replicas whose replication is throttled on the leader side, as PartitionId:BrokerId pairs, "
        "or '*' for all.",
        THROTTLED_REPLICAS,
    ),
    _topic(
        "local.retention.bytes",
        ConfigType.LONG,
        -2,
        "With tiered storage, the size of the local part of the log; -2 means retention.bytes.",
        at_least(-2),
        inert=NO_TIERED_STORAGE,
    ),
    _topic(
        "local.retention.ms",
        ConfigType.LONG,
        -2,
        "With tiered storage, how long segments stay local; -2 means retention.ms.",
        at_least(-2),
        inert=NO_TIERED_STORAGE,
    ),
    _topic(
        "max.compaction.lag.ms",
        ConfigType.LONG,
        LONG_MAX,
        "The longest a message may stay uncompacted in a compacted log.",
        at_least(1),
    ),
    _topic(
        "max.message.bytes",
        ConfigType.INT,
        1024 * 1024 + 12,
        "The largest record batch the topic accepts, in bytes.",
        at_least(0),
    ),
    _topic(
        "message.downconversion.enable",
        ConfigType.BOOLEAN,
        True,
        "Whether Fetch requests at versions that cannot read the stored format are served by "
        "converting batches down (Kafka 3.x).",
        importance=Importance.LOW,
    ),
    _topic(
        "message.format.version",
        ConfigType.STRING,
        FORMAT_VERSION_DEFAULT,
        "Message format version the topic's log is written in.",
        KAFKA_VERSION,
        inert=FORMAT_VERSION_IGNORED,
    ),
    _topic(
        "message.timestamp.after.max.ms",
        ConfigType.LONG,
        HOUR_MS,
        "How far a message's timestamp may lie in the future of the broker's clock (CreateTime).",
        at_least(0),
    ),
    _topic(
        "message.timestamp.before.max.ms",
        ConfigType.LONG,
        LONG_MAX,
        "How far a message's timestamp may lie in the past of the broker's clock (CreateTime).",
        at_least(0),
    ),
    _topic(
        "message.timestamp.type",
        ConfigType.STRING,
        "CreateTime",
        "Whether a message's timestamp is the producer's (CreateTime) or the append time (LogAppendTime).",
        one_of(*TIMESTAMP_TYPES),
    ),
    _topic(
        "min.cleanable.dirty.ratio",
        ConfigType.DOUBLE,
        0.5,
        "The share of the log that must be uncompacted before the cleaner compacts it.",
        between(0, 1),
    ),
    _topic(
        "min.compaction.lag.ms",
        ConfigType.LONG,
        0,
        "The shortest time a message stays uncompacted.",
        at_least(0),
    ),
    _topic(
        "min.insync.replicas",
        ConfigType.INT,
        1,
        "With acks=all, how many in-sync replicas must have a write for it to succeed.",
        at_least(1),
    ),
    _topic("preallocate", ConfigType.BOOLEAN, False, "Preallocate a new segment's file on disk."),
    _topic(
        "remote.log.copy.disable",
        ConfigType.BOOLEAN,
        False,
        "With tiered storage, stop copying segments to remote storage.",
        inert=NO_TIERED_STORAGE,
    ),
    _topic(
        "remote.log.delete.on.disable",
        ConfigType.BOOLEAN,
        False,
        "With tiered storage, delete remote segments when tiering is turned off for the topic.",
        inert=NO_TIERED_STORAGE,
    ),
    _topic(
        "remote.storage.enable",
        ConfigType.BOOLEAN,
        False,
        "Tier the topic's segments to remote storage.",
        refused=NO_TIERED_STORAGE,
    ),
    _topic(
        "retention.bytes",
        ConfigType.LONG,
        -1,
        "The size a partition's log may reach before old segments are deleted; -1 for no limit.",
    ),
    _topic(
        "retention.ms",
        ConfigType.LONG,
        WEEK_MS,
        "How long a segment is kept before it is deleted; -1 for no limit.",
        at_least(-1),
    ),
    _topic(
        "segment.bytes",
        ConfigType.INT,
        1024 * 1024 * 1024,
        "The size at which a segment is closed and a new one started.",
        at_least(1024 * 1024),
    ),
    _topic(
        "segment.index.bytes",
        ConfigType.INT,
        10 * 1024 * 1024,
        "The size of a segment's offset index file.",
        at_least(4),
    ),
    _topic(
        "segment.jitter.ms",
        ConfigType.LONG,
        0,
        "Up to this much random time is taken off segment.ms, so segments do not all roll at once.",
        at_least(0),
    ),
    _topic(
        "segment.ms",
        ConfigType.LONG,
        WEEK_MS,
        "The age at which a segment is rolled even if it is not full.",
        at_least(1),
    ),
    _topic(
        "unclean.leader.election.enable",
        ConfigType.BOOLEAN,
        False,
        "Allow a replica outside the ISR to become leader, at the risk of losing data.",
        cluster_only=NO_ELECTION,
    ),
)

# Broker configs that supply each topic config's default, highest priority first (Kafka's
# ServerTopicConfigSynonyms). Topic configs missing here have no broker-level default.
TOPIC_SYNONYMS: dict[str, tuple[BrokerSynonym, ...]] = {
    "cleanup.policy": (BrokerSynonym("log.cleanup.policy"),),
    "compression.gzip.level": (BrokerSynonym("compression.gzip.level"),),
    "compression.lz4.level": (BrokerSynonym("compression.lz4.level"),),
    "compression.type": (BrokerSynonym("compression.type"),),
    "compression.zstd.level": (BrokerSynonym("compression.zstd.level"),),
    "delete.retention.ms": (BrokerSynonym("log.cleaner.delete.retention.ms"),),
    "file.delete.delay.ms": (BrokerSynonym("log.segment.delete.delay.ms"),),
    "flush.messages": (BrokerSynonym("log.flush.interval.messages"),),
    "flush.ms": (BrokerSynonym("log.flush.interval.ms"), BrokerSynonym("log.flush.scheduler.interval.ms")),
    "index.interval.bytes": (BrokerSynonym("log.index.interval.bytes"),),
    "local.retention.bytes": (BrokerSynonym("log.local.retention.bytes"),),
    "local.retention.ms": (BrokerSynonym("log.local.retention.ms"),),
    "max.compaction.lag.ms": (BrokerSynonym("log.cleaner.max.compaction.lag.ms"),),
    "max.message.bytes": (BrokerSynonym("message.max.bytes"),),
    "message.downconversion.enable": (BrokerSynonym("log.message.downconversion.enable"),),
    "message.format.version": (BrokerSynonym("log.message.format.version"),),
    "message.timestamp.after.max.ms": (BrokerSynonym("log.message.timestamp.after.max.ms"),),
    "message.timestamp.before.max.ms": (BrokerSynonym("log.message.timestamp.before.max.ms"),),
    "message.timestamp.type": (BrokerSynonym("log.message.timestamp.type"),),
    "min.cleanable.dirty.ratio": (BrokerSynonym("log.cleaner.min.cleanable.ratio"),),
    "min.compaction.lag.ms": (BrokerSynonym("log.cleaner.min.compaction.lag.ms"),),
    "min.insync.replicas": (BrokerSynonym("min.insync.replicas"),),
    "preallocate": (BrokerSynonym("log.preallocate"),),
    "retention.bytes": (BrokerSynonym("log.retention.bytes"),),
    "retention.ms": (
        BrokerSynonym("log.retention.ms"),
        BrokerSynonym("log.retention.minutes", MINUTE_MS),
        BrokerSynonym("log.retention.hours", HOUR_MS),
    ),
    "segment.bytes": (BrokerSynonym("log.segment.bytes"),),
    "segment.index.bytes": (BrokerSynonym("log.index.size.max.bytes"),),
    "segment.jitter.ms": (
        BrokerSynonym("log.roll.jitter.ms"),
        BrokerSynonym("log.roll.jitter.hours", HOUR_MS),
    ),
    "segment.ms": (BrokerSynonym("log.roll.ms"), BrokerSynonym("log.roll.hours", HOUR_MS)),
    "unclean.leader.election.enable": (BrokerSynonym("unclean.leader.election.enable"),),
}

TOPIC_CONFIGS: dict[str, ConfigKey] = {key.name: key for key in TOPIC_CONFIG_KEYS}
