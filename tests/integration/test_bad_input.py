"""A few thousand hostile frames on many connections: the broker keeps serving a well-behaved client.

The short version of `bench/bad_input.py`: random and mutated frames (tests/support/hostile_frames.py)
while a confluent-kafka producer and consumer work on their own topic. The client must see no error
and read back exactly what was acknowledged; the broker must stay up, log no unexpected handler
error, and keep its memory bounded.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from tests.support.bad_input_load import RssSampler, WellBehavedClient, hostile_load
from tests.support.broker_process import BrokerProcess
from tests.support.hostile_frames import HOSTILE_TOPICS
from tests.support.interop import wait_until
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

FRAMES = 4000
#: RSS the broker may gain over the load (connection buffers, caches, allocator slack).
RSS_GROWTH_LIMIT_KIB = 64 * 1024


def create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(15)  # raises if the topic could not be created


def test_hostile_frames_leave_the_broker_and_a_well_behaved_client_unharmed(tmp_path: Path) -> None:
    broker = BrokerProcess(
        tmp_path / "data", {"offsets.topic.num.partitions": "1", "auto.create.topics.enable": "false"}
    ).start()
    try:
        create_topics(broker.bootstrap, [*HOSTILE_TOPICS, "well-behaved"])
        client = WellBehavedClient(broker.bootstrap, "well-behaved").start()
        try:
            wait_until(lambda: len(client.acknowledged) >= 50, 20, "the well-behaved client to get going")
            assert broker.process is not None
            with RssSampler(broker.process.pid) as rss:
                stats = asyncio.run(hostile_load(broker.port, FRAMES, concurrency=16, seed=20240611))
        finally:
            client.stop()
        assert client.check() == []
        assert len(client.acknowledged) > 50
        assert broker.process.poll() is None, "the broker died"
        assert stats.frames >= FRAMES and stats.connect_errors == 0
        assert stats.closed_by_broker > 0 and stats.response_bytes > 0
        growth = rss.samples[-1][1] - rss.samples[0][1]
        assert growth < RSS_GROWTH_LIMIT_KIB, f"broker RSS grew by {growth} KiB over {stats.frames} frames"
        with RawClient(broker.port) as raw:
            assert raw.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        log = broker.log_path.read_text(errors="replace")
        assert "Traceback" not in log and "unexpected error" not in log, log[-3000:]
    finally:
        broker.stop()
