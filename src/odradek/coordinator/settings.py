"""The group coordinator's configs, read from the broker config on every use (they may change live)."""

from __future__ import annotations

from typing import Final

from odradek.config.broker import BrokerConfig
from odradek.config.group_catalog import (
    ConsumerGroupSettings,
    GroupConfigLookup,
    ShareGroupSettings,
    consumer_group_settings,
    no_group_configs,
    share_group_settings,
)

#: How long a new classic member's JoinGroup may wait (Kafka's group.classic.new.member.join.timeout).
NEW_MEMBER_JOIN_TIMEOUT_MS: Final = 300_000
OFFSETS_TOPIC: Final = "__consumer_offsets"


class GroupSettings:
    def __init__(self, config: BrokerConfig, group_configs: GroupConfigLookup = no_group_configs) -> None:
        self.config = config
        #: Each group's GROUP configs (KIP-848/932), over the broker's settings for that group.
        self.group_configs = group_configs

    def share_group(self, group_id: str) -> ShareGroupSettings:
        """What the share group `group_id` runs with: its GROUP configs, the broker's group.share.* else."""
        return share_group_settings(self.group_configs(group_id), self.config)

    def consumer_group(self, group_id: str) -> ConsumerGroupSettings:
        """What the consumer group `group_id` runs with: its GROUP configs, the broker's
        group.consumer.* else (read at each heartbeat, so a change applies from the next, as Kafka)."""
        return consumer_group_settings(self.group_configs(group_id), self.config)

    @property
    def min_session_timeout_ms(self) -> int:
        return self.config.group_min_session_timeout_ms

    @property
    def max_session_timeout_ms(self) -> int:
        return self.config.group_max_session_timeout_ms

    @property
    def initial_rebalance_delay_ms(self) -> int:
        return self.config.group_initial_rebalance_delay_ms

    @property
    def max_size(self) -> int:
        return self.config.group_max_size

    @property
    def offsets_load_buffer_size(self) -> int:
        return self.config.offsets_load_buffer_size

    @property
    def new_member_join_timeout_ms(self) -> int:
        return NEW_MEMBER_JOIN_TIMEOUT_MS

    @property
    def offset_metadata_max_bytes(self) -> int:
        return self.config.offset_metadata_max_bytes

    @property
    def offsets_retention_ms(self) -> int:
        return self.config.offsets_retention_minutes * 60_000

    @property
    def offsets_retention_check_interval_ms(self) -> int:
        return self.config.offsets_retention_check_interval_ms

    @property
    def offsets_commit_timeout_ms(self) -> int:
        return self.config.offsets_commit_timeout_ms

    @property
    def offsets_topic_num_partitions(self) -> int:
        return self.config.offsets_topic_num_partitions

    @property
    def offsets_topic_replication_factor(self) -> int:
        return self.config.offsets_topic_replication_factor

    @property
    def offsets_topic_segment_bytes(self) -> int:
        return self.config.offsets_topic_segment_bytes

    @property
    def offsets_topic_compression_codec(self) -> int:
        return self.config.offsets_topic_compression_codec

    @property
    def rebalance_protocols(self) -> list[str]:
        return self.config.group_coordinator_rebalance_protocols

    @property
    def consumer_max_size(self) -> int:
        return self.config.group_consumer_max_size

    @property
    def consumer_assignors(self) -> list[str]:
        return self.config.group_consumer_assignors

    @property
    def share_groups_enabled(self) -> bool:
        return "share" in self.config.group_coordinator_rebalance_protocols

    @property
    def share_max_size(self) -> int:
        return self.config.group_share_max_size
