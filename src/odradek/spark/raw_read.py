"""Reading one offset range by plain Fetch requests, decoding the returned batches straight into Arrow.

The fast path of the source (option `reader`: `auto`, the default, uses it for plaintext listeners;
`consumer` forces confluent-kafka). It speaks the Kafka protocol with odradek's codec: Metadata v8 to
find the partition's leader, Fetch v11 (one partition, up to `FETCH_BYTES` a response). The next fetch
is sent before the current response is decoded, so the broker serves while this task decodes. Errors it
does not handle itself (offsets out of range, leadership moves it cannot follow) hand the rest of the
range to the confluent-kafka reader, which has the data-loss logic.

A delegation token's login (which librdkafka cannot make) always reads here, under TLS and SASL as the
options say (client/security.py), and has no confluent-kafka reader to hand over to: it follows
leadership moves itself, applies the data-loss rule to offsets no longer there, and raises any other
error (TOPIC_AUTHORIZATION_FAILED for a topic the token's owner may not read) naming it.
"""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from odradek.client.cluster import Cluster, RequestError
from odradek.client.offsets import list_offsets
from odradek.client.security import PLAINTEXT, ClientSecurity, authenticate, secure
from odradek.protocol.codec import decode_from
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import encode_request, response_header_version
from odradek.protocol.messages import RESPONSES
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.response_header import ResponseHeader
from odradek.spark.consumer_read import DataLossError, data_loss_message
from odradek.spark.kafka_options import token_security
from odradek.spark.offsets import EARLIEST_OFFSET
from odradek.spark.options import SourceOptions
from odradek.spark.ranges import OffsetRange
from odradek.spark.record_decode import decode_region

FETCH_BYTES = 8 * 1024 * 1024
FETCH_VERSION = 11
METADATA_VERSION = 8
_SIZE = struct.Struct(">i")
#: SaslHandshake v1 and SaslAuthenticate v1, as Kafka's clients.
_SASL_VERSION = 1
#: A token's read: errors that clear by themselves (a leader moving), and how often one is asked again.
_RETRIABLE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
_TOKEN_READ_ATTEMPTS = 10
_RETRY_PAUSE_S = 0.5
log = logging.getLogger(__name__)


class Connection:
    """One blocking socket to a broker; requests may be sent ahead and their responses read in order."""

    def __init__(self, host: str, port: int, timeout_s: float, security: ClientSecurity = PLAINTEXT) -> None:
        """Connected, under TLS and logged in when `security` asks (ClientSecurityError if refused)."""
        sock = socket.create_connection((host, port), timeout=timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = secure(sock, security, host)
        self.correlation_id = 0
        self.pending: list[tuple[int, int, int]] = []  # (correlation id, api key, version)
        self.buffer = bytearray()
        try:
            authenticate(lambda request: self.request(request, _SASL_VERSION), security)
        except BaseException:
            self.sock.close()
            raise

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
    """The raw path cannot go on; the rest of the range is read by confluent-kafka. `error`: the
    broker's, when it gave one."""

    def __init__(self, message: str, error: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.error = error


def read_range_raw(offset_range: OffsetRange, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    if options.token_login:
        yield from _read_range_with_token(offset_range, options)
        return
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


def _read_range_with_token(offset_range: OffsetRange, options: SourceOptions) -> Iterator[pa.RecordBatch]:
    """A token's read: no confluent-kafka reader can take over (it cannot log in with a token)."""
    security = token_security(options.kafka_params)
    topic, partition, until = offset_range.topic, offset_range.partition, offset_range.until_offset
    position, failures = offset_range.from_offset, 0
    while position < until:
        rest = OffsetRange(topic, partition, position, until)
        try:
            for batch, next_position in _fetch_range(rest, options, security):
                position, failures = next_position, 0
                yield batch
            return
        except TimeoutError:
            raise  # kafkaConsumer.pollTimeoutMs waited out (an OSError, but no dropped connection)
        except (NeedsConsumer, OSError) as failure:
            error = failure.error if isinstance(failure, NeedsConsumer) else None
            if error is ErrorCode.OFFSET_OUT_OF_RANGE:
                position = _after_data_loss(rest, options, security)
                continue
            retriable = isinstance(failure, OSError) or error in _RETRIABLE
            failures += 1
            if not retriable or failures >= _TOKEN_READ_ATTEMPTS:
                what = f"reading {topic}-{partition} at offset {position}: {failure}"
                if error is not None:
                    raise RequestError(what, error) from None
                raise RuntimeError(what) from failure
            time.sleep(_RETRY_PAUSE_S)


def _after_data_loss(offset_range: OffsetRange, options: SourceOptions, security: ClientSecurity) -> int:
    """Where a token's read goes on when its offset is no longer in the log (failOnDataLoss=false:
    the earliest offset there is, as the confluent-kafka reader), or DataLossError."""
    tp = (offset_range.topic, offset_range.partition)
    cluster = Cluster(options.kafka_params["bootstrap.servers"], options.poll_timeout_ms / 1000, security)
    try:
        low = list_offsets(cluster, {tp: EARLIEST_OFFSET}, options.poll_timeout_ms / 1000)[tp]
    finally:
        cluster.close()
    position = offset_range.from_offset
    detail = f"Cannot fetch offset {position} of {tp[0]}-{tp[1]}: the earliest available offset is {low}."
    if options.fail_on_data_loss or low <= position:
        raise DataLossError(data_loss_message(detail))
    log.warning("%s Skipping to %d (failOnDataLoss=false).", detail, min(low, offset_range.until_offset))
    return min(low, offset_range.until_offset)


def _fetch_range(
    offset_range: OffsetRange, options: SourceOptions, security: ClientSecurity = PLAINTEXT
) -> Iterator[tuple[pa.RecordBatch, int]]:
    topic, partition, until = offset_range.topic, offset_range.partition, offset_range.until_offset
    timeout_s = options.poll_timeout_ms / 1000
    connection = _leader_connection(options, topic, partition, timeout_s, security)
    position = offset_range.from_offset
    waited_since = time.monotonic()
    try:
        connection.send(_fetch_request(topic, partition, position), FETCH_VERSION)
        while position < until:
            data = _partition_data(connection.receive())
            error = ErrorCode(data.error_code)
            if error is not ErrorCode.NONE:
                raise NeedsConsumer(f"{topic}-{partition}: {error.name}", error)
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
        error = ErrorCode(response.error_code)
        raise NeedsConsumer(f"fetch failed: {error.name}", error)
    return response.responses[0].partitions[0]


def _leader_connection(
    options: SourceOptions, topic: str, partition: int, timeout_s: float, security: ClientSecurity
) -> Connection:
    """Ask a bootstrap server who leads the partition, and connect to it."""
    last_error: Exception | None = None
    for server in options.kafka_params["bootstrap.servers"].split(","):
        host, _, port = server.strip().rpartition(":")
        host = host.strip("[]") or "localhost"
        try:
            bootstrap = Connection(host, int(port), timeout_s, security)
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
            if t.error_code:
                topic_error = ErrorCode(t.error_code)
                raise NeedsConsumer(f"Metadata for {topic}: {topic_error.name}", topic_error)
            for p in t.partitions:
                if p.partition_index == partition and p.error_code == 0 and p.leader_id in brokers:
                    leader_host, leader_port = brokers[p.leader_id]
                    return Connection(leader_host, leader_port, timeout_s, security)
        raise NeedsConsumer(f"no leader known for {topic}-{partition}", ErrorCode.LEADER_NOT_AVAILABLE)
    raise NeedsConsumer(f"no bootstrap server reachable: {last_error}")
