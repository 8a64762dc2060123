"""The group coordinator's configs, read from the broker config on every use (they may change live)."""

from __future__ import annotations

from typing import Any, Final

#: How long a new classic member's JoinGroup may wait (Kafka's group.classic.new.member.join.timeout).
NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 300_000
OFFSETS_TOPIC: Final = "__consumer_offsets"


class GroupSettings:
    def __init__(self, config: Any) -> None:
        self.config = config

    def _int(self, name: str) -> int:
        return int(self.config[name])

    @property
    def min_session_timeout_ms(self) -> int:
        return self._int("group.min.session.timeout.ms")

    @property
    def max_session_timeout_ms(self) -> int:
        return self._int("group.max.session.timeout.ms")

    @property
    def initial_rebalance_delay_ms(self) -> int:
        return self._int("group.initial.rebalance.delay.ms")

    @property
    def max_size(self) -> int:
        return self._int("group.max.size")

    @property
    def new_member_join_timeout_ms(self) -> int:
        return NEW_MEMBER_JOIN_TIMEOUT_MS

    @property
    def offset_metadata_max_bytes(self) -> int:
        return self._int("offset.metadata.max.bytes")

    @property
    def offsets_retention_ms(self) -> int:
        return self._int("offsets.retention.minutes") * 60_000

    @property
    def offsets_retention_check_interval_ms(self) -> int:
        return self._int("offsets.retention.check.interval.ms")

    @property
    def offsets_topic_num_partitions(self) -> int:
        return self._int("offsets.topic.num.partitions")

    @property
    def offsets_topic_replication_factor(self) -> int:
        return self._int("offsets.topic.replication.factor")

    @property
    def offsets_topic_segment_bytes(self) -> int:
        return self._int("offsets.topic.segment.bytes")

    @property
    def offsets_topic_compression_codec(self) -> int:
        return self._int("offsets.topic.compression.codec")

    @property
    def rebalance_protocols(self) -> list[str]:
        value = self.config["group.coordinator.rebalance.protocols"]
        return [str(v) for v in value] if isinstance(value, list) else str(value).split(",")

    @property
    def consumer_session_timeout_ms(self) -> int:
        return self._int("group.consumer.session.timeout.ms")

    @property
    def consumer_heartbeat_interval_ms(self) -> int:
        return self._int("group.consumer.heartbeat.interval.ms")

    @property
    def consumer_max_size(self) -> int:
        return self._int("group.consumer.max.size")

    @property
    def consumer_assignors(self) -> list[str]:
        value = self.config["group.consumer.assignors"]
        return [str(v) for v in value] if isinstance(value, list) else str(value).split(",")

    @property
    def single_node(self) -> bool:
        """No ZooKeeper: this broker is the whole cluster."""
        try:
            return not self.config["zookeeper.connect"]
        except KeyError:
            return True
