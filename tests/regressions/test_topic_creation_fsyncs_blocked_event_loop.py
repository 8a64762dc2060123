"""Creating a topic's partitions ran every fsync (seven per partition: segment dir, partition.metadata,
snapshot, leader epoch checkpoint) on the event loop: an admin's 500-partition topic, or the 50 of
`__consumer_offsets`, stalled every other connection for seconds. The partitions are now made in a
worker thread, with one directory fsync per directory, and the topic stays invisible until they are
durable: another connection is served meanwhile, sees LEADER_NOT_AVAILABLE for the topic, and a second
CreateTopics for it gets TOPIC_ALREADY_EXISTS (it is created once).

Instead of timing, a stand-in for os.fsync holds the creation's first fsync (a very slow disk) and
records which thread each fsync ran on: before the fix it held the event loop itself.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.server.broker import Broker
from tests.support.fsync_gate import FsyncGate
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 500
#: A broker not yet past its creation would leave this connection unanswered: fail, do not wait.
ANSWER_TIMEOUT_S = 5.0


def test_other_connections_are_served_while_500_partitions_are_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asyncio.run(_scenario(tmp_path, monkeypatch))


async def _scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    config = BrokerConfig(
        {
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data),
            "num.partitions": "1",
            "log.flush.offset.checkpoint.interval.ms": "3600000",  # no checkpoint fsyncs meanwhile
        },
        warn_unknown=False,
    )
    broker = Broker(config)
    await broker.start()
    gate = FsyncGate(hold_marker="/big-", hold_seconds=15)
    monkeypatch.setattr(os, "fsync", gate)
    try:
        port = broker.bound["PLAINTEXT"][1]
        creating = asyncio.ensure_future(asyncio.to_thread(_create, port, "big"))
        assert await asyncio.to_thread(gate.holding.wait, 30), "the creation never fsynced"

        # The creation is held in an fsync: another connection is still served.
        with RawClient(port, timeout=ANSWER_TIMEOUT_S) as other:
            assert (await asyncio.to_thread(_api_versions_error, other)) == ErrorCode.NONE
            named = await asyncio.to_thread(_metadata, other, ["big"])
            listed = await asyncio.to_thread(_metadata, other, None)
        assert not gate.released.is_set() and not creating.done()
        assert [(t.name, t.error_code, t.partitions) for t in named.topics] == [
            ("big", ErrorCode.LEADER_NOT_AVAILABLE, [])
        ]
        assert "big" not in {t.name for t in listed.topics}
        duplicate = asyncio.ensure_future(asyncio.to_thread(_create, port, "big"))

        gate.release()
        created = await creating
        again = await duplicate
        creation_fsyncs = len(gate.calls_under("/big-"))  # before the shutdown's own
        on_loop = [call.path for call in gate.calls if call.on_main_thread]
    finally:
        gate.release()
        await broker.stop()

    assert (created.error_code, created.num_partitions) == (ErrorCode.NONE, PARTITIONS)
    assert again.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert on_loop == [], f"{len(on_loop)} fsyncs on the event loop, e.g. {on_loop[:3]}"
    # Three small files per partition and one fsync of its directory (there were seven).
    assert creation_fsyncs == 4 * PARTITIONS
    assert sorted(p.name for p in data.iterdir() if p.name.startswith("big-")) == sorted(
        f"big-{p}" for p in range(PARTITIONS)
    )


def _create(port: int, name: str) -> Any:
    request = CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=PARTITIONS, replication_factor=1)], timeout_ms=60_000
    )
    with RawClient(port, timeout=60) as client:
        return client.request(request, 7).topics[0]


def _api_versions_error(client: RawClient) -> int:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return int(client.request(request, 3).error_code)


def _metadata(client: RawClient, names: list[str] | None) -> Any:
    topics = None if names is None else [MetadataRequestTopic(name=name) for name in names]
    return client.request(MetadataRequest(topics=topics, allow_auto_topic_creation=False), 12)
