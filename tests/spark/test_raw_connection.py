"""The raw reader's connection reuses one receive buffer: each response must decode from its own frame only,
never from bytes an earlier, longer frame left behind."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from odradek.protocol.codec import CodecError
from odradek.protocol.frames import encode_response
from odradek.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from odradek.spark.raw_read import FETCH_VERSION, Connection, _fetch_request


def fetch_response(records: bytes) -> FetchResponse:
    return FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=0,
        responses=[
            FetchableTopicResponse(
                topic="t",
                partitions=[
                    PartitionData(
                        partition_index=0,
                        error_code=0,
                        high_watermark=10,
                        last_stable_offset=10,
                        log_start_offset=0,
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=records,
                    )
                ],
            )
        ],
    )


@pytest.fixture
def pair() -> Iterator[tuple[Connection, socket.socket]]:
    """A Connection to a loopback socket the test writes the broker's side of."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        connection = Connection("127.0.0.1", server.getsockname()[1], timeout_s=5)
        broker, _ = server.accept()
    with broker:
        yield connection, broker
    connection.close()


def answer(connection: Connection, broker: socket.socket, frame: bytes) -> object:
    connection.send(_fetch_request("t", 0, 0), FETCH_VERSION)
    broker.sendall(frame)
    return connection.receive()


def records_of(response: object) -> bytes:
    return bytes(response.responses[0].partitions[0].records)  # type: ignore[attr-defined]


def test_a_shorter_response_after_a_longer_one_reads_only_its_own_bytes(
    pair: tuple[Connection, socket.socket],
) -> None:
    connection, broker = pair
    long_records, short_records = bytes(range(256)) * 200, b"short records"
    first = answer(connection, broker, encode_response(fetch_response(long_records), FETCH_VERSION, 1))
    assert records_of(first) == long_records
    buffer = connection.buffer
    second = answer(connection, broker, encode_response(fetch_response(short_records), FETCH_VERSION, 2))
    assert records_of(second) == short_records
    assert connection.buffer is buffer  # reused, not allocated again


def test_a_body_that_ends_before_its_frame_is_refused(pair: tuple[Connection, socket.socket]) -> None:
    connection, broker = pair
    frame = bytearray(encode_response(fetch_response(b"records"), FETCH_VERSION, 1))
    frame += b"\0\0\0"  # bytes the body does not account for
    struct.pack_into(">i", frame, 0, len(frame) - 4)
    with pytest.raises(ConnectionError, match="decoded to"):
        answer(connection, broker, bytes(frame))


def test_a_body_cut_short_does_not_read_an_earlier_frame_s_leftovers(
    pair: tuple[Connection, socket.socket],
) -> None:
    """The buffer still holds a whole earlier response; a frame that stops inside its own records must
    not be completed from those bytes."""
    connection, broker = pair
    whole = encode_response(fetch_response(b"x" * 5000), FETCH_VERSION, 1)
    answer(connection, broker, whole)
    cut = bytearray(encode_response(fetch_response(b"x" * 5000), FETCH_VERSION, 2))[:-2000]
    struct.pack_into(">i", cut, 0, len(cut) - 4)
    with pytest.raises((ConnectionError, CodecError)):
        answer(connection, broker, bytes(cut))
