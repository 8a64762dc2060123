"""A consumer reading its Fetch answer steadily but slowly (a thin link) was closed by idle expiry before
it had the whole answer: the writer counted what the kernel took as taken by the client, and the
kernel's autotuned send buffer took the last half megabyte of the answer at once, so the client spent
longer than connections.max.idle.ms draining it while the broker saw no progress. (Within a region the
writer also counted only each whole 1 MiB given to loop.sendfile: tests/unit/server/
test_response_writer.py.) Kafka refreshes a channel's idle time whenever the socket takes more of its
answer, with a 100 KiB send buffer; the writer now counts every piece the socket takes, less what the
kernel holds unacknowledged.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

import pytest

from odradek.protocol.frames import encode_request
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

IDLE_MS = 1500
TOPIC = "slow-reader"
BATCHES = 4  # of about 1 MB each: more than the kernel's socket buffers hold
#: The client's pace: at most 8 KiB every 25 ms (330 KB/s), so 1 MiB takes 3.2 s, twice IDLE_MS.
PIECE, PAUSE = 8192, 0.025


def test_a_consumer_reading_its_fetch_answer_slowly_but_steadily_gets_all_of_it(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {"connections.max.idle.ms": str(IDLE_MS)}).start()
    try:
        produce_batches(broker.port)
        with socket.create_connection(("127.0.0.1", broker.port)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            fetch = FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=8 << 20,
                topics=[
                    FetchTopic(
                        topic=TOPIC,
                        partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=8 << 20)],
                    )
                ],
            )
            sock.sendall(encode_request(fetch, 4, 1, "slow"))
            sock.settimeout(10)
            received, size, closed_early = 0, None, False
            while size is None or received < size + 4:
                try:
                    data = sock.recv(PIECE)
                except (ConnectionResetError, TimeoutError):
                    data = b""
                if not data:
                    closed_early = True
                    break
                if size is None:
                    size = struct.unpack(">i", data[:4])[0]
                received += len(data)
                time.sleep(PAUSE)
    finally:
        broker.stop()
    assert size is not None and size > BATCHES * 1_000_000
    assert not closed_early, (
        f"closed after {received:,} of {size + 4:,} bytes although the client read all the time: "
        + "; ".join(line for line in broker.log_path.read_text().splitlines() if "closing connection" in line)
    )


def produce_batches(port: int) -> None:
    with RawClient(port) as client:
        client.request(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12)
        for batch_number in range(BATCHES):
            builder = RecordBatchBuilder()
            for i in range(100):
                builder.append(1_700_000_000_000 + i, b"k", bytes([batch_number]) * 10_000)
            produce = ProduceRequest(
                acks=1,
                timeout_ms=5000,
                topic_data=[
                    TopicProduceData(
                        name=TOPIC, partition_data=[PartitionProduceData(index=0, records=builder.build())]
                    )
                ],
            )
            answer = client.request(produce, 7)
            assert answer.responses[0].partition_responses[0].error_code == 0
