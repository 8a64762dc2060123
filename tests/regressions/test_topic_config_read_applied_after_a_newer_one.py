"""A cluster member reads a topic's configs from /config/topics each time a change notification (or a
new topic) names it, in a worker thread, and applied each read when it finished: two reads of one
topic at once (two notifications close together, each spawning its own pass) could finish out of
order, the older read's configs applied last, and the broker kept stale overrides (retention.ms...)
until the topic changed again. Kafka's notifications are handled one at a time; e730255 made a
broker's reads of its own dynamic configs take turns, this does the same for topic configs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.metadata import topic_configs
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from tests.support.controller_requests import leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, led_here


@pytest.mark.timeout(60)
def test_a_topic_config_read_begun_before_another_is_never_applied_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True)
    stored = {"retention.ms": "1000"}
    first_reading, first_may_return = threading.Event(), threading.Event()
    reads = 0

    def reading(_zk: Any, _entity_type: str, _name: str) -> dict[str, str]:
        nonlocal reads
        reads += 1
        seen = dict(stored)
        if reads == 1:  # the older read: what ZooKeeper held, returned late
            first_reading.set()
            first_may_return.wait(30)
        return seen

    monkeypatch.setattr(topic_configs, "entity_config", reading)
    sync = TopicConfigSync(None, broker.services.cluster, broker.services.logs)  # type: ignore[arg-type]

    async def run() -> None:
        await broker.call(update_metadata(BROKERS, [led_here(0)], {TOPIC: TOPIC_ID}), 8)
        await broker.call(leader_and_isr([led_here(0)], {TOPIC: TOPIC_ID}), 7)
        older = asyncio.ensure_future(sync._read(TOPIC))
        await asyncio.to_thread(first_reading.wait, 30)
        stored["retention.ms"] = "2000"  # changed meanwhile, and notified again
        newer = asyncio.ensure_future(sync._read(TOPIC))
        # the newer read is done (it came back at once) or waits for its turn behind the older one
        await asyncio.wait({newer}, timeout=5)
        first_may_return.set()
        await asyncio.gather(older, newer)

    try:
        asyncio.run(run())
        assert sync.known[TOPIC] == {"retention.ms": "2000"}
        assert broker.log(TOPIC, 0).config.retention_ms == 2000
    finally:
        first_may_return.set()
        broker.close()
