"""LogConfig: the topic configs storage reads, with Kafka's names and defaults.

Field names are Kafka's topic config names with dots turned into underscores; ``from_mapping`` takes
the dotted names. A log is handed a new LogConfig when topic configs change (AlterConfigs); nothing in
storage caches a derived value across that.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from odradek.config.topic_catalog import TOPIC_CONFIGS
from odradek.config.types import ConfigError, parse_value
from odradek.protocol.records import COMPRESSION_TYPES, Compression, TargetCompression
from odradek.storage.errors import InvalidLogConfigError

LONG_MAX = 2**63 - 1

CLEANUP_POLICY_DELETE = "delete"
CLEANUP_POLICY_COMPACT = "compact"
TIMESTAMP_TYPE_CREATE_TIME = "CreateTime"
TIMESTAMP_TYPE_LOG_APPEND_TIME = "LogAppendTime"

ConfigValue = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Per-topic log configuration (Kafka 3.x defaults)."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 60 * 60 * 1000
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = (CLEANUP_POLICY_DELETE,)
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1024 * 1024 + 12
    message_timestamp_type: str = TIMESTAMP_TYPE_CREATE_TIME
    #: How far a CreateTime record's timestamp may lie before / after the broker's clock (Kafka 4.0's
    #: defaults: any age, at most an hour ahead).
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 60 * 60 * 1000
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False
    compression_type: str = "producer"
    #: KIP-390's levels: gzip 1-9 or -1 (zlib's default), lz4 1-17, zstd -131072..22.
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    #: Whether consumers' Fetch v0-3 are served by converting batches down (Kafka 3.x).
    message_downconversion_enable: bool = True
    #: The replicas whose replication is throttled, on the leader's and on the follower's side:
    #: "partition:broker" pairs or "*" (cluster/replication/replication_quota.py), as Kafka's LogConfig.
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise InvalidLogConfigError(f"segment.bytes must be at least 14, got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise InvalidLogConfigError(f"segment.ms must be at least 1, got {self.segment_ms}")
        if self.segment_jitter_ms < 0:
            raise InvalidLogConfigError(f"segment.jitter.ms must be >= 0, got {self.segment_jitter_ms}")
        if self.segment_index_bytes < 12:
            raise InvalidLogConfigError(
                f"segment.index.bytes must be at least 12, got {self.segment_index_bytes}"
            )
        if self.index_interval_bytes < 0:
            raise InvalidLogConfigError(f"index.interval.bytes must be >= 0, got {self.index_interval_bytes}")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise InvalidLogConfigError(
                f"min.cleanable.dirty.ratio must be in [0, 1], got {self.min_cleanable_dirty_ratio}"
            )
        if self.message_timestamp_type not in (TIMESTAMP_TYPE_CREATE_TIME, TIMESTAMP_TYPE_LOG_APPEND_TIME):
            raise InvalidLogConfigError(f"unknown message.timestamp.type {self.message_timestamp_type!r}")
        unknown = set(self.cleanup_policy) - {CLEANUP_POLICY_DELETE, CLEANUP_POLICY_COMPACT}
        if unknown or not self.cleanup_policy:
            raise InvalidLogConfigError(f"invalid cleanup.policy {','.join(self.cleanup_policy)!r}")
        if self.message_timestamp_before_max_ms < 0 or self.message_timestamp_after_max_ms < 0:
            raise InvalidLogConfigError("message.timestamp.before.max.ms and .after.max.ms must be >= 0")
        if self.max_message_bytes < 0:
            raise InvalidLogConfigError(f"max.message.bytes must be >= 0, got {self.max_message_bytes}")
        if self.flush_messages < 1 or self.flush_ms < 0:
            raise InvalidLogConfigError("flush.messages must be >= 1 and flush.ms >= 0")
        if self.compression_type not in COMPRESSION_TYPES:
            raise InvalidLogConfigError(f"unknown compression.type {self.compression_type!r}")
        if not (1 <= self.compression_gzip_level <= 9 or self.compression_gzip_level == -1):
            raise InvalidLogConfigError(
                f"compression.gzip.level must be in [1, 9] or -1, got {self.compression_gzip_level}"
            )
        if not 1 <= self.compression_lz4_level <= 17:
            raise InvalidLogConfigError(
                f"compression.lz4.level must be in [1, 17], got {self.compression_lz4_level}"
            )
        if not -131072 <= self.compression_zstd_level <= 22:
            raise InvalidLogConfigError(
                f"compression.zstd.level must be in [-131072, 22], got {self.compression_zstd_level}"
            )

    @classmethod
    def from_mapping(cls, m: Mapping[str, object], base: LogConfig | None = None) -> LogConfig:
        """A config from Kafka-named keys ("segment.bytes" ...), over ``base`` (or Kafka's defaults).

        Keys storage does not use are ignored, so a whole topic config map can be passed. A string
        (an override as stored, perhaps by a Kafka broker or another tool) is parsed by the topic
        config's Kafka type first, as DescribeConfigs and Kafka's ConfigDef parse it: what they would
        refuse is never applied.
        """
        changes: dict[str, Any] = {}
        for name, value in m.items():
            field = _FIELDS_BY_KAFKA_NAME.get(name)
            if field is None or value is None:
                continue
            key = TOPIC_CONFIGS.get(name)
            if isinstance(value, str) and key is not None:
                try:
                    value = parse_value(name, key.type, value)
                except ConfigError as error:
                    raise InvalidLogConfigError(str(error)) from None
            changes[field.name] = _coerce(name, field.type, value)
        return dataclasses.replace(base if base is not None else cls(), **changes)

    def to_mapping(self) -> dict[str, ConfigValue]:
        """Kafka-named keys and typed values (cleanup.policy as its comma-separated string)."""
        out: dict[str, ConfigValue] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            out[field.name.replace("_", ".")] = ",".join(value) if isinstance(value, tuple) else value
        return out

    @property
    def compact(self) -> bool:
        return CLEANUP_POLICY_COMPACT in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return CLEANUP_POLICY_DELETE in self.cleanup_policy

    @property
    def compression(self) -> TargetCompression | None:
        """The codec (at its level) batches are stored in; None for ``producer``: each batch as sent."""
        codec = COMPRESSION_TYPES[self.compression_type]
        if codec is None:
            return None
        level = {
            Compression.GZIP: self.compression_gzip_level,
            Compression.LZ4: self.compression_lz4_level,
            Compression.ZSTD: self.compression_zstd_level,
        }.get(codec)
        return TargetCompression(codec, level)

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == TIMESTAMP_TYPE_LOG_APPEND_TIME

    @property
    def max_segment_ms(self) -> int:
        """How old the active segment may get (Kafka's LogConfig.maxSegmentMs): a compacted topic rolls
        by ``max.compaction.lag.ms`` too, as the cleaner never cleans the active segment."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def random_segment_jitter(self, rng: random.Random | None = None) -> int:
        """A segment's roll jitter in [0, min(segment.jitter.ms, segment.ms)), as Kafka picks it."""
        if self.segment_jitter_ms == 0:
            return 0
        return (rng or random).randrange(min(self.segment_jitter_ms, self.segment_ms))


_FIELDS_BY_KAFKA_NAME = {f.name.replace("_", "."): f for f in dataclasses.fields(LogConfig)}


def _coerce(name: str, type_name: object, value: object) -> object:
    try:
        if type_name == "int":
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise TypeError
            return int(value)
        if type_name == "float":
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise TypeError
            return float(value)
        if type_name == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise TypeError
        if type_name == "str":
            if not isinstance(value, str):
                raise TypeError
            return value
        # cleanup.policy: "compact,delete" or a list of policies
        if isinstance(value, str):
            return tuple(p.strip().lower() for p in value.split(",") if p.strip())
        if isinstance(value, list | tuple):
            return tuple(str(p).strip().lower() for p in value)
        raise TypeError
    except (TypeError, ValueError):
        raise InvalidLogConfigError(f"invalid value {value!r} for {name}") from None
