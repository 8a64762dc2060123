"""Reading one offset range by plain Fetch requests, decoding the returned batches straight into Arrow.

The fast path of the source (option `reader`: `auto`, the default, uses it for plaintext listeners;
`consumer` forces confluent-kafka). It speaks the Kafka protocol with odradek's codec: Metadata v8 to
find the partition's leader, Fetch v11 (one partition, up to `FETCH_BYTES` a response). The next fetch
is sent before the current response is decoded, so the broker serves while this task decodes. Errors it
does not handle itself (offsets out of range, leadership moves it cannot follow) hand the rest of the
range to the confluent-kafka reader, which has the data-loss logic.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from odradek.protocol.codec import decode_from
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import encode_request, response_header_version
from odradek.protocol.messages import RESPONSES
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.response_header import ResponseHeader
from odradek.spark.options import SourceOptions
from odradek.spark.ranges import OffsetRange
from odradek.spark.record_decode import decode_region

FETCH_BYTES = 8 * 1024 * 1024
FETCH_VERSION = 11
METADATA_VERSION = 8
_SIZE = struct.Struct(">i")


class Connection:
    """One blocking socket to a broker; requests may be sent ahead and their responses read in order."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation_id = 0
        self.pending: list[tuple[int, int, int]] = []  # (correlation id, api key, version)
        self.buffer = bytearray()

    def send(self, body: Any, version: int) -> None:
        self.correlation_id += 1
        self.sock.sendall(encode_request(body, version, self.correlation_id, "odradek-spark"))
        self.pending.append((self.correlation_id, body.API_KEY, version))

    def receive(self) -> Any:
        """The next response's body, decoded in place from the connection's receive buffer: a Fetch
        response's records are a view into it, valid until the next `receive` (which reuses the buffer:
        a new 8 MB buffer per fetch costs more in page faults than decoding what it holds)."""
        correlation_id, api_key, version = self.pending.pop(0)
        (size,) = _SIZE.unpack(self._read_exactly(4))
        if len(self.buffer) < size:
            self.buffer = bytearray(size + size // 8)
        frame = self.buffer
        self._read_into(memoryview(frame)[:size])
        header, start = decode_from(ResponseHeader, frame, 0, response_header_version(api_key, version))
        # The buffer may be longer than this frame: a body that reads past `size` is caught by its end.
        body, end = decode_from(RESPONSES[api_key], frame, start, version)
        if end != size:
            raise ConnectionError(f"a response of {size} bytes decoded to {end} bytes")
        got = header.correlation_id
        if got != correlation_id:
            raise ConnectionError(f"response for request {got} where {correlation_id} was expected")
        return body

    def request(self, body: Any, version: int) -> Any:
        self.send(body, version)
        return self.receive()

    def close(self) -> None:
        self.sock.close()

    def _read_exactly(self, size: int) -> bytearray:
        buf = bytearray(size)
        self._read_into(memoryview(buf))
        return buf

    def _read_into(self, view: memoryview) -> None:
        got = 0
        size = len(view)
        while got < size:
            n = self.sock.recv_into(view[got:], size - got)
            if n == 0:
                raise ConnectionError("broker closed the connection")
            got += n


class NeedsConsumer(Exception):
    """The raw path cannot go on; the rest of the range is read by confluent-kafka."""


def read_range_raw(offset_range: OffsetRange, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    position = offset_range.from_offset
    try:
        for batch, next_position in _fetch_range(offset_range, options):
            position = next_position
            yield batch
    except (NeedsConsumer, OSError):
        if position >= offset_range.until_offset:
            return
        from odradek.spark.consumer_read import read_range_with_consumer

        rest = OffsetRange(offset_range.topic, offset_range.partition, position, offset_range.until_offset)
        yield from read_range_with_consumer(rest, options)


def _fetch_range(offset_range: OffsetRange, options: SourceOptions) -> Iterator[tuple[pa.RecordBatch, int]]:
    topic, partition, until = offset_range.topic, offset_range.partition, offset_range.until_offset
    timeout_s = options.poll_timeout_ms / 1000
    connection = _leader_connection(options, topic, partition, timeout_s)
    position = offset_range.from_offset
    waited_since = time.monotonic()
    try:
        connection.send(_fetch_request(topic, partition, position), FETCH_VERSION)
        while position < until:
            data = _partition_data(connection.receive())
            error = ErrorCode(data.error_code)
            if error is not ErrorCode.NONE:
                raise NeedsConsumer(f"{topic}-{partition}: {error.name}")
            records = data.records or b""
            region = decode_region(
                records,
                topic=topic,
                partition=partition,
                from_offset=position,
                until_offset=until,
                columns=options.output_columns,
            )
            if region.complete_batches == 0 and data.high_watermark <= position:
                # Nothing there yet (a range always ends at or below the high watermark when planned).
                if (time.monotonic() - waited_since) * 1000 > options.poll_timeout_ms:
                    raise TimeoutError(
                        f"Cannot fetch record for offset {position} in {options.poll_timeout_ms} milliseconds"
                    )
            elif region.complete_batches == 0:
                raise NeedsConsumer(f"{topic}-{partition}: a batch at {position} is larger than a fetch")
            else:
                waited_since = time.monotonic()
            position = max(position, region.next_offset)
            if position < until:
                connection.send(_fetch_request(topic, partition, position), FETCH_VERSION)
            if region.batch is not None:
                yield region.batch, position
    finally:
        connection.close()


def _fetch_request(topic: str, partition: int, offset: int) -> FetchRequest:
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=FETCH_BYTES,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        log_start_offset=-1,
                        partition_max_bytes=FETCH_BYTES,
                    )
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def _partition_data(response: Any) -> Any:
    if response.error_code:
        raise NeedsConsumer(f"fetch failed: {ErrorCode(response.error_code).name}")
    return response.responses[0].partitions[0]


def _leader_connection(options: SourceOptions, topic: str, partition: int, timeout_s: float) -> Connection:
    """Ask a bootstrap server who leads the partition, and connect to it."""
    last_error: Exception | None = None
    for server in options.kafka_params["bootstrap.servers"].split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]") or "localhost"
        try:
            bootstrap = Connection(host, int(port), timeout_s)
        except OSError as error:
            last_error = error
            continue
        try:
            metadata = bootstrap.request(
                MetadataRequest(
                    topics=[MetadataRequestTopic(name=topic)],
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                ),
                METADATA_VERSION,
            )
        finally:
            bootstrap.close()
        brokers = {b.node_id: (b.host, b.port) for b in metadata.brokers}
        for t in metadata.topics:
            if t.name != topic:
                continue
            for p in t.partitions:
                if p.partition_index == partition and p.error_code == 0 and p.leader_id in brokers:
                    leader_host, leader_port = brokers[p.leader_id]
                    return Connection(leader_host, leader_port, timeout_s)
        raise NeedsConsumer(f"no leader known for {topic}-{partition}")
    raise NeedsConsumer(f"no bootstrap server reachable: {last_error}")
