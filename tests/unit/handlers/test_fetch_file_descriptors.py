"""The file regions of a Fetch answer and the descriptors they hold.

Each partition's region duplicated its segment's file descriptor (os.dup) when the fetch was read and
held it until the answer was written: a consumer fetching 1,000 partitions took 1,000 descriptors for
one answer, and a few such answers (or clients that do not read them) ran the broker out of
descriptors (EMFILE: no connection accepted, no segment rolled). Kafka sends from the segment's own
FileChannel. The segment's descriptor is now shared, counted, by the segment and the answers sending
from it, and closed when the last lets go: a segment deleted under a pending answer is still served.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from odradek.partition.file_records import FileRecords
from odradek.protocol.messages.fetch import FetchResponse
from odradek.server.output import ResponseOutput
from tests.support.handler_services import HandlerBroker
from tests.support.response_writing import writer_and_peer

from .fetching import FETCH_VERSION, fetch_request, produce

pytestmark = pytest.mark.timeout(60)

TOPIC = "many"
PARTITIONS = 200
VALUE = b"v" * 70_000  # over the size from which a fetch sends records from the file


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def file_records_of(response: FetchResponse) -> list[FileRecords]:
    records = [data.records for topic in response.responses for data in topic.partitions]
    assert all(isinstance(r, FileRecords) for r in records), "records not sent from the file"
    return [r for r in records if isinstance(r, FileRecords)]


async def test_a_fetch_of_many_partitions_takes_no_file_descriptor_per_partition(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, partitions=PARTITIONS)
    for partition in range(PARTITIONS):
        await produce(handler_broker, TOPIC, partition, VALUE)
    before = open_descriptors()
    request = fetch_request({(TOPIC, partition): 0 for partition in range(PARTITIONS)})
    responses = [await handler_broker.call(request, FETCH_VERSION) for _ in range(3)]  # three answers pending
    taken = open_descriptors() - before
    pending = [records for response in responses for records in file_records_of(response)]
    assert len(pending) == 3 * PARTITIONS
    assert taken < 10, f"{taken} descriptors held by 3 answers of {PARTITIONS} partitions"  # 600 before
    for records in pending:
        records.close()
    assert open_descriptors() <= before


async def test_a_segment_deleted_under_a_pending_answer_is_still_served_whole(
    handler_broker: HandlerBroker, tmp_path: Path
) -> None:
    await handler_broker.create_topic(TOPIC)
    await produce(handler_broker, TOPIC, 0, VALUE)
    log = handler_broker.logs.get_log(TOPIC, 0)
    assert log is not None
    expected = log.read(0, 1 << 20).read_bytes()
    response = await handler_broker.call(fetch_request({(TOPIC, 0): 0}), FETCH_VERSION)
    (records,) = file_records_of(response)
    for segment in log.segments:
        segment.delete_files()  # as retention does once file.delete.delay.ms has passed
    # Files opened meanwhile take the lowest free descriptor numbers: never the answer's bytes.
    others = [os.open(tmp_path / f"other-{n}", os.O_RDWR | os.O_CREAT) for n in range(4)]
    for fd in others:
        os.write(fd, b"not the records")
    try:
        writer, transport, peer = await writer_and_peer(peer_receive_buffer=1 << 20)
        out = ResponseOutput()
        records.append_to(out)
        sending = asyncio.create_task(writer.send(out))
        received = bytearray()
        peer.setblocking(False)
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(10):
            while len(received) < len(expected):
                received += await loop.sock_recv(peer, 1 << 20)
            await sending
        transport.close()
        peer.close()
    finally:
        for fd in others:
            os.close(fd)
    assert bytes(received) == expected
