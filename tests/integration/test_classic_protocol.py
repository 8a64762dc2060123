"""The classic protocol guide's rules, checked over a plain socket with odradek's own codec.

Old request versions (Metadata v0, Produce v0 with MessageSet v0, Fetch v0, ListOffsets v0), the
ApiVersions fallback for a too-new client, and the connection rules: in-order answers to pipelined
requests, no answer to acks=0, and which mistakes close a connection (and only that one).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.frames import encode_request
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import (
    Compression,
    Record,
    build_message_set,
    decode_message_set,
    iter_record_batches,
)
from odradek.protocol.schema import Request
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import ConnectionClosedError, RawClient

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def classic_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("classic") / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def client(classic_broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(classic_broker.port) as raw:
        yield raw


def _create_topics(client: RawClient, *names: str) -> None:
    response = client.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names]), 1)
    assert [(t.name, t.error_code) for t in response.topics] == [(n, ErrorCode.NONE) for n in names]


def _produce(topic: str, records: bytes, acks: int = 1, partition: int = 0) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=records)]
            )
        ],
    )


def _fetch(topic: str, offset: int, max_wait_ms: int = 0, min_bytes: int = 1) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)],
            )
        ],
    )


def _list_offsets(topic: str, timestamp: int, max_num_offsets: int = 1) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsPartition(
                        partition_index=0, timestamp=timestamp, max_num_offsets=max_num_offsets
                    )
                ],
            )
        ],
    )


def _fetched_records(client: RawClient, topic: str, offset: int, version: int) -> list[Record]:
    response = client.request(_fetch(topic, offset), version)
    [partition] = response.responses[0].partitions
    assert partition.error_code == ErrorCode.NONE
    data = partition.records or b""
    if version >= 4:
        return [r for batch in iter_record_batches(data) for r in batch.records]
    magic = 0 if version <= 1 else 1
    message_set = decode_message_set(data)
    assert all(batch.magic == magic for batch in message_set.batches)
    return message_set.records


def _plain(records: list[Record]) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in records]


# ----- Metadata ----------------------------------------------------------------------------------


def test_metadata_v0_empty_list_is_every_topic_v1_null_is_every_topic_and_empty_is_none(
    client: RawClient,
) -> None:
    _create_topics(client, "classic-meta-a", "classic-meta-b")
    everything_v0 = client.request(MetadataRequest(topics=[]), 0)
    names_v0 = {t.name for t in everything_v0.topics}
    assert {"classic-meta-a", "classic-meta-b"} <= names_v0
    everything_v1 = client.request(MetadataRequest(topics=None), 1)
    assert {t.name for t in everything_v1.topics} == names_v0
    none_v1 = client.request(MetadataRequest(topics=[]), 1)
    assert none_v1.topics == []
    assert [b.port for b in none_v1.brokers] == [client.sock.getpeername()[1]]
    one_v0 = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="classic-meta-a")]), 0)
    assert [t.name for t in one_v0.topics] == ["classic-meta-a"]


# ----- Produce / Fetch across record formats -----------------------------------------------------


def test_produce_v0_message_set_v0_reads_back_the_same_with_fetch_v0_and_fetch_v11(client: RawClient) -> None:
    topic = "classic-v0"
    _create_topics(client, topic)
    records = [Record(i, -1, b"k%d" % i, b"value-%d" % i) for i in range(5)]
    records.append(Record(5, -1, None, b"no key"))
    records.append(Record(6, -1, b"null value", None))
    response = client.request(_produce(topic, build_message_set(records, magic=0)), 0)
    [partition] = response.responses[0].partition_responses
    assert (partition.error_code, partition.base_offset) == (ErrorCode.NONE, 0)
    second = [Record(i, -1, b"k%d" % i, b"later-%d" % i) for i in range(3)]
    response = client.request(_produce(topic, build_message_set(second, magic=0)), 0)
    assert response.responses[0].partition_responses[0].base_offset == 7

    expected = [(r.offset, r.key, r.value) for r in records] + [
        (7 + r.offset, r.key, r.value) for r in second
    ]
    assert _plain(_fetched_records(client, topic, 0, 0)) == expected
    assert _plain(_fetched_records(client, topic, 0, 11)) == expected
    # From the middle of the log (and of the first produced batch): v0 starts exactly there.
    assert _plain(_fetched_records(client, topic, 3, 0)) == expected[3:]
    assert _plain(_fetched_records(client, topic, 8, 11))[-2:] == expected[-2:]


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP])
def test_produce_v2_message_set_v1_reads_back_with_fetch_v0_v2_and_v11(
    client: RawClient, compression: Compression
) -> None:
    topic = f"classic-v1-{compression.name.lower()}"
    _create_topics(client, topic)
    base_time = 1_600_000_000_000
    records = [Record(i, base_time + i * 10, b"key-%d" % i, b"payload-%d" % i * 3) for i in range(20)]
    message_set = build_message_set(records, magic=1, compression=compression)
    response = client.request(_produce(topic, message_set), 2)
    [partition] = response.responses[0].partition_responses
    assert (partition.error_code, partition.base_offset) == (ErrorCode.NONE, 0)
    assert partition.log_append_time_ms == -1

    expected = _plain(records)
    assert _plain(_fetched_records(client, topic, 0, 0)) == expected
    as_v1 = _fetched_records(client, topic, 0, 2)
    assert _plain(as_v1) == expected
    assert [r.timestamp for r in as_v1] == [r.timestamp for r in records]
    as_v2 = _fetched_records(client, topic, 0, 11)
    assert _plain(as_v2) == expected
    assert [r.timestamp for r in as_v2] == [r.timestamp for r in records]
    if compression is Compression.GZIP:
        fetched = client.request(_fetch(topic, 0), 11).responses[0].partitions[0].records
        assert [b.compression for b in iter_record_batches(fetched)] == [Compression.GZIP]


# ----- ListOffsets v0 ----------------------------------------------------------------------------


def test_list_offsets_v0_answers_old_style_offsets_up_to_max_num_offsets(client: RawClient) -> None:
    topic = "classic-offsets"
    _create_topics(client, topic)
    empty = client.request(_list_offsets(topic, -1, max_num_offsets=10), 0)
    assert empty.topics[0].partitions[0].old_style_offsets == [0]
    records = [Record(i, -1, None, b"x%d" % i) for i in range(12)]
    client.request(_produce(topic, build_message_set(records, magic=0)), 0)

    latest = client.request(_list_offsets(topic, -1, max_num_offsets=10), 0).topics[0].partitions[0]
    assert latest.error_code == ErrorCode.NONE
    assert latest.old_style_offsets == [12, 0]  # the high watermark, then each segment's base offset
    only_one = client.request(_list_offsets(topic, -1, max_num_offsets=1), 0).topics[0].partitions[0]
    assert only_one.old_style_offsets == [12]
    earliest = client.request(_list_offsets(topic, -2, max_num_offsets=10), 0).topics[0].partitions[0]
    assert earliest.old_style_offsets == [0]
    unknown = client.request(_list_offsets("classic-no-such-topic", -1), 0).topics[0].partitions[0]
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# ----- ApiVersions -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_api_versions_every_version(client: RawClient, version: int) -> None:
    request = ApiVersionsRequest(client_software_name="raw-test", client_software_version="1.0")
    response = client.request(request, version)
    assert response.error_code == ErrorCode.NONE
    served = {v.api_key: (v.min_version, v.max_version) for v in response.api_keys}
    assert served[ApiKey.API_VERSIONS] == (0, 5)
    for api in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA):
        assert served[api][0] == 0, f"{api.name} must serve the classic v0"


def test_api_versions_newer_than_ours_gets_a_v0_unsupported_version_answer_and_the_connection_stays(
    client: RawClient,
) -> None:
    request = ApiVersionsRequest(client_software_name="future-client", client_software_version="9.9")
    frame = bytearray(encode_request(request, 5, correlation_id=77, client_id="future"))
    struct.pack_into(">h", frame, 6, 6)  # v6: a header and body laid out as v5's, version bumped
    client.send_bytes(bytes(frame))
    correlation_id, response = client.receive(ApiKey.API_VERSIONS, 0)
    assert correlation_id == 77
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(v.api_key, v.min_version, v.max_version) for v in response.api_keys] == [
        (ApiKey.API_VERSIONS, 0, 5)
    ]
    # The client now retries with a version we know, on the same connection.
    retried = client.request(request, 3)
    assert retried.error_code == ErrorCode.NONE and len(retried.api_keys) > 1


# ----- Connection rules --------------------------------------------------------------------------


@pytest.mark.parametrize(("api_key", "version"), [(999, 0), (ApiKey.METADATA, 99)], ids=["key", "version"])
def test_an_unknown_api_key_or_version_closes_the_connection(
    classic_broker: BrokerProcess, api_key: int, version: int
) -> None:
    with RawClient(classic_broker.port) as raw:
        client_id = b"raw"
        body = struct.pack(">hhih", api_key, version, 5, len(client_id)) + client_id + b"\0" * 8
        raw.send_bytes(struct.pack(">i", len(body)) + body)
        assert raw.wait_closed(timeout=5), "the broker kept the connection open"
    with RawClient(classic_broker.port) as other:
        assert other.request(MetadataRequest(topics=[]), 1).topics == []


def test_fifty_pipelined_requests_are_answered_in_order(client: RawClient) -> None:
    topic = "classic-pipeline"
    _create_topics(client, topic)
    client.request(_produce(topic, build_message_set([Record(0, -1, b"k", b"v")], magic=0)), 0)
    # A mix of APIs, including fetches that wait for data that never comes: a slow request early
    # in the pipe must still be answered before the quick ones behind it.
    requests: list[tuple[Request, int]] = []
    for i in range(50):
        if i % 10 == 0:
            requests.append((_fetch(topic, 1, max_wait_ms=100, min_bytes=1), 4))
        elif i % 3 == 0:
            requests.append((_list_offsets(topic, -1), 1))
        elif i % 3 == 1:
            requests.append((MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 1))
        else:
            requests.append((ApiVersionsRequest(), 0))
    frames = b"".join(
        encode_request(body, version, correlation_id=1000 + i, client_id="pipe")
        for i, (body, version) in enumerate(requests)
    )
    client.send_bytes(frames)
    for i, (body, version) in enumerate(requests):
        correlation_id, response = client.receive(body.API_KEY, version)
        assert correlation_id == 1000 + i
        if body.API_KEY == ApiKey.FETCH:
            assert response.responses[0].partitions[0].high_watermark == 1
        elif body.API_KEY == ApiKey.LIST_OFFSETS:
            assert response.topics[0].partitions[0].offset == 1


def test_acks_zero_produce_gets_no_response_but_the_next_request_does(client: RawClient) -> None:
    topic = "classic-acks0"
    _create_topics(client, topic)
    records = [Record(i, -1, None, b"fire-and-forget-%d" % i) for i in range(3)]
    unanswered = client.send(_produce(topic, build_message_set(records, magic=0), acks=0), 0)
    answered = client.send(_list_offsets(topic, -1), 1)
    correlation_id, response = client.receive(ApiKey.LIST_OFFSETS, 1)
    assert correlation_id == answered != unanswered
    assert response.topics[0].partitions[0].offset == 3  # handled in order: the append came first


def test_a_frame_larger_than_socket_request_max_bytes_closes_the_connection(
    classic_broker: BrokerProcess,
) -> None:
    with RawClient(classic_broker.port) as raw:
        assert raw.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        raw.send_bytes(struct.pack(">i", 104857600 + 1) + b"\0" * 64)  # the default limit is 100 MiB
        assert raw.wait_closed(timeout=5)
    with RawClient(classic_broker.port) as raw:
        raw.send_bytes(struct.pack(">i", -5))
        assert raw.wait_closed(timeout=5)


def test_a_malformed_frame_closes_only_its_own_connection(classic_broker: BrokerProcess) -> None:
    with RawClient(classic_broker.port) as healthy, RawClient(classic_broker.port) as broken:
        assert healthy.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        assert broken.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
        # A Metadata v1 request whose topic array claims 1000 entries but holds three bytes.
        header = struct.pack(">hhih", ApiKey.METADATA, 1, 9, 3) + b"bad"
        body = header + struct.pack(">i", 1000) + b"\x00\x05a"
        broken.send_bytes(struct.pack(">i", len(body)) + body)
        assert broken.wait_closed(timeout=5)
        with pytest.raises((ConnectionClosedError, OSError)):
            broken.request(ApiVersionsRequest(), 0)
        for _ in range(3):
            assert healthy.request(MetadataRequest(topics=None), 1).brokers


def test_idle_connections_are_closed_after_connections_max_idle_ms(tmp_path: Path) -> None:
    process = BrokerProcess(tmp_path / "data", {"connections.max.idle.ms": "400"}).start()
    try:
        with RawClient(process.port) as idle, RawClient(process.port) as busy:
            assert idle.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            started = time.monotonic()
            # The busy connection keeps talking (every 100 ms) and must survive the idle one's close.
            while time.monotonic() - started < 3:
                assert busy.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
                if idle.wait_closed(timeout=0.1):
                    break
            else:
                pytest.fail("the idle connection was still open after 3 s (connections.max.idle.ms=400)")
            assert time.monotonic() - started >= 0.3
            assert busy.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
    finally:
        process.stop()
