"""A replica log a LeaderAndIsr creates on a ZooKeeper cluster member (a reassignment moving a partition
onto this broker, a partition added) was made with the broker's topic defaults over the log dir's topic
store, which holds no cluster topic's configs: when this broker had read the topic's /config/topics
already (it knew the topic), nothing gave the new log the topic's overrides (retention.ms,
cleanup.policy, the throttled replicas...) until they changed again. Found by the throttled reassignment:
the new replica's follower.replication.throttled.replicas never reached its log, so it was not throttled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.controller_requests import leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, led_by_1


def test_a_replica_log_made_by_leader_and_isr_takes_the_topic_configs_this_broker_knows(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True)

    async def run() -> None:
        await broker.call(update_metadata(BROKERS, [led_by_1(1)], {TOPIC: TOPIC_ID}), 8)
        state = broker.services.cluster.topic(TOPIC)
        assert state is not None
        # as TopicConfigSync read /config/topics/orders, before this broker had a replica of it
        state.configs = {"retention.ms": "1234", "follower.replication.throttled.replicas": "1:2"}
        await broker.call(leader_and_isr([led_by_1(1)], {TOPIC: TOPIC_ID}), 7)

    try:
        asyncio.run(run())
        config = broker.log(TOPIC, 1).config
        assert config.retention_ms == 1234
        assert config.follower_replication_throttled_replicas == ("1:2",)
    finally:
        broker.close()
