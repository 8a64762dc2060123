"""A replica fetcher's connection to its leader, against a fake leader on loopback: the records of a
Fetch answer reach the fetcher as views of the frame the socket filled (no copy in Python), the
connection keeps working once the streams it was opened with are gone, and a leader that goes away
fails the request with an OSError (the fetcher's cue to reconnect)."""

from __future__ import annotations

import asyncio
import gc
import uuid

import pytest

from odradek.cluster.replication.leader_connection import LeaderConnection
from odradek.protocol.messages.fetch import (
    FetchableTopicResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    PartitionData,
)
from odradek.protocol.records import RecordBatchBuilder
from tests.support.fake_broker import FakeBroker, Received

TOPIC_ID = uuid.UUID(int=7)
FETCH_VERSION = 17


def _records(batches: int, value_bytes: int) -> bytes:
    out = bytearray()
    for offset in range(batches):
        builder = RecordBatchBuilder(offset, partition_leader_epoch=1)
        builder.append(1_700_000_000_000, None, bytes([offset % 256]) * value_bytes)
        out += builder.build()
    return bytes(out)


def _fetch() -> FetchRequest:
    partition = FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    return FetchRequest(
        replica_id=2,
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=1 << 20,
        topics=[FetchTopic(topic_id=TOPIC_ID, partitions=[partition])],
    )


def _leader(records: bytes) -> FakeBroker:
    async def respond(received: Received) -> FetchResponse:
        data = PartitionData(partition_index=0, high_watermark=1, records=records)
        return FetchResponse(responses=[FetchableTopicResponse(topic_id=TOPIC_ID, partitions=[data])])

    return FakeBroker(1, responder=respond)


async def _connected(fake: FakeBroker) -> LeaderConnection:
    connection = LeaderConnection(fake.host, fake.port, "broker-2-test", 10_000, -1)
    await connection.connect()
    return connection


def test_fetched_records_are_views_of_the_received_frame_not_copies() -> None:
    records = _records(batches=40, value_bytes=8000)  # ~320 KB: many socket reads

    async def main() -> None:
        fake = await _leader(records).start()
        connection = await _connected(fake)
        try:
            response: FetchResponse = await connection.send(_fetch(), FETCH_VERSION)
            fetched = response.responses[0].partitions[0].records
            assert isinstance(fetched, memoryview)
            assert fetched.obj.__class__ is bytearray  # the frame itself
            assert len(fetched.obj) < len(records) + 200  # ...which is the response, not a copy of more
            assert fetched == records
        finally:
            connection.close()
            await fake.stop()

    asyncio.run(main())


def test_the_connection_keeps_answering_after_a_garbage_collection() -> None:
    async def main() -> None:
        fake = await _leader(_records(batches=2, value_bytes=10)).start()
        connection = await _connected(fake)
        try:
            for _ in range(3):
                gc.collect()  # the stream writer it was opened with must not close the transport
                response: FetchResponse = await connection.send(_fetch(), FETCH_VERSION)
                assert response.responses[0].partitions[0].high_watermark == 1
                assert connection.connected
            assert len(fake.received) == 3
        finally:
            connection.close()
            await fake.stop()

    asyncio.run(main())


def test_a_leader_that_goes_away_fails_the_request_with_an_os_error() -> None:
    async def main() -> None:
        async def never(received: Received) -> None:
            return None  # no answer: the leader stops meanwhile

        fake = await FakeBroker(1, responder=never).start()
        connection = await _connected(fake)
        try:
            sending = asyncio.ensure_future(connection.send(_fetch(), FETCH_VERSION))
            await fake.wait_for(lambda f: len(f.received) == 1)
            await fake.stop()
            with pytest.raises(OSError):
                await sending
            assert not connection.connected
        finally:
            connection.close()
            await fake.stop()

    asyncio.run(main())
