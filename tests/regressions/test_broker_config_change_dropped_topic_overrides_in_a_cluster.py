"""A dynamic broker config change on a ZooKeeper cluster member gave every partition log the new topic
defaults over the topic overrides of the log dir's own topic store, which a cluster member does not keep
(its topics' configs come from /config/topics): every topic override (retention.ms, the throttled
replicas...) left the logs until the topic's configs changed again. Found by the throttled reassignment
(`kafka-reassign-partitions --throttle` sets the topic's throttled replicas, then the brokers' rates,
which dropped the replicas just set: nothing was throttled)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.handlers._common.config_alteration import reconfigure
from odradek.storage.config import LogConfig
from tests.support.controller_requests import leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, led_here


def test_a_broker_config_change_keeps_the_topic_overrides_a_cluster_member_read_from_zookeeper(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True)

    async def run() -> None:
        await broker.call(update_metadata(BROKERS, [led_here(0)], {TOPIC: TOPIC_ID}), 8)
        await broker.call(leader_and_isr([led_here(0)], {TOPIC: TOPIC_ID}), 7)
        # as TopicConfigSync applies /config/topics/orders
        overrides = {"retention.ms": "1234", "leader.replication.throttled.replicas": "0:2"}
        state = broker.services.cluster.topic(TOPIC)
        assert state is not None
        state.configs = dict(overrides)
        logs = broker.services.logs
        logs.apply_topic_config(TOPIC, logs.topic_log_config(overrides))
        reconfigure(broker.services, broker.services.config.with_dynamic({"log.retention.ms": "3600000"}, {}))

    try:
        asyncio.run(run())
        config = broker.log(TOPIC, 0).config
        assert config.retention_ms == 1234
        assert config.leader_replication_throttled_replicas == ("0:2",)
        assert broker.services.logs.default_config.retention_ms == 3_600_000  # the new default applies
    finally:
        broker.close()


def test_unusable_topic_configs_written_by_another_tool_leave_the_log_as_it_was(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True)

    async def run() -> None:
        await broker.call(update_metadata(BROKERS, [led_here(0)], {TOPIC: TOPIC_ID}), 8)
        await broker.call(leader_and_isr([led_here(0)], {TOPIC: TOPIC_ID}), 7)
        state = broker.services.cluster.topic(TOPIC)
        assert state is not None
        state.configs = {"segment.bytes": "1"}  # below what storage takes
        reconfigure(broker.services, broker.services.config.with_dynamic({"log.retention.ms": "3600000"}, {}))

    try:
        asyncio.run(run())  # raised InvalidLogConfigError, half applied
        assert broker.log(TOPIC, 0).config.segment_bytes == LogConfig().segment_bytes
        assert broker.services.logs.default_config.retention_ms == 3_600_000
    finally:
        broker.close()
