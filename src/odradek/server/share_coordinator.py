"""Building the share coordinator (coordinator/share/): its runtime over `__share_group_state`, the
metadata check of its keys' topics and the topic's creation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from odradek.config.broker import BrokerConfig
from odradek.coordinator.ports import InternalTopics, MetadataView
from odradek.coordinator.runtime import ShardFactoryRuntime
from odradek.coordinator.share.coordinator import (
    SHARE_STATE_TOPIC,
    ShareCoordinator,
    share_state_topic_configs,
)
from odradek.coordinator.share.shard import ShareShard
from odradek.partition.leadership import Leadership
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.records import Compression
from odradek.storage.log_manager import LogManager


def build_share_coordinator(
    config: BrokerConfig,
    cluster: MetadataView,
    topics: InternalTopics,
    logs: LogManager,
    node_id: int,
    leadership: Leadership,
    *,
    clock: Callable[[], float] = time.time,
) -> ShareCoordinator:
    """The share coordinator; its writes are committed through `leadership` (the replica manager)."""

    def now_ms() -> int:
        return int(clock() * 1000)

    def partition_exists(key: SharePartitionKey) -> bool:
        topic = cluster.topic_by_id(key.topic_id)
        return topic is not None and 0 <= key.partition < len(topic.partitions)

    def make_shard(partition: int) -> ShareShard:
        return ShareShard(
            partition,
            lambda: config.share_coordinator_snapshot_update_records_per_snapshot,
            now_ms,
            partition_exists,
        )

    runtime = ShardFactoryRuntime(
        make_shard,
        SHARE_STATE_TOPIC,
        "share-partition states",
        config.share_coordinator_state_topic_num_partitions,
        config.share_coordinator_load_buffer_size,
        Compression(config.share_coordinator_state_topic_compression_codec),
        logs,
        cluster,
        node_id,
        clock,
        leadership=leadership,
    )

    async def ensure_topic() -> bool:
        if cluster.topic(SHARE_STATE_TOPIC) is not None:
            return True
        replication = config.share_coordinator_state_topic_replication_factor
        configs = share_state_topic_configs(config)
        creation = runtime.topic_creation(lambda: runtime.create_topic(topics, replication, configs))
        return await asyncio.shield(creation)  # shared by every caller: one's cancel stops no other

    return ShareCoordinator(config, runtime, ensure_topic)
