"""A ShareFetch's MaxBytes bounds the whole answer, as a Fetch's does (Kafka's share fetch reads its
partitions with the request's byte limit shared between them, one whole batch at least for the first).

Each partition was read with the whole MaxBytes (up to fetch.max.bytes, 50 MiB by default): a member
fetching many partitions with a backlog was answered their sum, far past what it asked for, the broker
reading and holding it all in memory, on its event loop, for one request.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from odradek.partition.share.manager import EARLIEST, SharePartitionManager
from odradek.partition.share.persister import SharePartitionKey
from odradek.protocol.messages import share_fetch as sf
from odradek.protocol.records import Record, build_record_batch
from tests.support.handler_services import HandlerBroker
from tests.support.share_persister import InMemorySharePersister

PARTITIONS = 3
RECORD_BYTES = 100_000


def _fetch(topic_id: uuid.UUID, max_bytes: int) -> sf.ShareFetchRequest:
    return sf.ShareFetchRequest(
        group_id="sg",
        member_id="a",
        share_session_epoch=0,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        max_records=500,
        batch_size=500,
        topics=[
            sf.FetchTopic(
                topic_id=topic_id,
                partitions=[sf.FetchPartition(partition_index=p) for p in range(PARTITIONS)],
            )
        ],
    )


async def test_a_share_fetch_answers_no_more_than_max_bytes_over_all_its_partitions(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    persister = InMemorySharePersister()
    manager = SharePartitionManager.for_broker(
        broker.config, persister, lambda _: {"share.auto.offset.reset": EARLIEST}
    )
    broker.services.share_partitions = manager
    try:
        topic = await broker.create_topic("big", PARTITIONS)
        for partition in range(PARTITIONS):
            await persister.initialize(SharePartitionKey("sg", topic.topic_id, partition), 0, -1)
            record = Record(offset=0, timestamp=1, key=None, value=bytes(RECORD_BYTES))
            broker.log("big", partition).append(bytearray(build_record_batch([record])))

        answer = await broker.call_over_wire(_fetch(topic.topic_id, int(1.5 * RECORD_BYTES)), 1)

        sizes = [len(p.records or b"") for t in answer.responses for p in t.partitions]
        assert sum(size > 0 for size in sizes) == 1  # the first batch whole; no room for a second
        assert sum(sizes) < 2 * RECORD_BYTES

        # what was not sent is not acquired either: the next fetch gets it
        again = await broker.call_over_wire(_fetch(topic.topic_id, 10 * RECORD_BYTES), 1)
        got = [p.partition_index for t in again.responses for p in t.partitions if p.acquired_records]
        assert len(got) == PARTITIONS - 1
    finally:
        manager.close()
        broker.close()
