"""Whole frames: Kafka's header-version rules, requests and responses at every version, bad frames."""

from __future__ import annotations

import struct

import pytest

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError, TruncatedError
from odradek.protocol.frames import (
    UnsupportedRequestError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_into,
    is_flexible,
    request_header_version,
    response_header_version,
)
from odradek.protocol.messages import REQUESTS, RESPONSES
from odradek.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from odradek.protocol.messages.controlled_shutdown import ControlledShutdownRequest
from odradek.protocol.messages.fetch import FetchableTopicResponse, FetchResponse, PartitionData
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic, MetadataResponse
from odradek.protocol.messages.request_header import RequestHeader
from odradek.protocol.schema import Message

from .kafka_python_oracle import kafka_python_class, shared_cases, to_kafka_python

REQUEST_CASES = [
    (cls, v) for cls in REQUESTS.values() for v in range(cls.VERSIONS.low, cls.VERSIONS.high + 1)
]
RESPONSE_CASES = [
    (cls, v) for cls in RESPONSES.values() for v in range(cls.VERSIONS.low, cls.VERSIONS.high + 1)
]


def _id(case: tuple[type[Message], int]) -> str:
    return f"{case[0].__name__}-v{case[1]}"


# ----- header-version rules -------------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "version"), REQUEST_CASES, ids=[_id(c) for c in REQUEST_CASES])
def test_request_header_version(cls: type[Message], version: int) -> None:
    if cls.API_KEY == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
        expected = 0
    else:
        expected = 2 if version in cls.FLEXIBLE else 1
    assert request_header_version(cls.API_KEY, version) == expected


@pytest.mark.parametrize(("cls", "version"), RESPONSE_CASES, ids=[_id(c) for c in RESPONSE_CASES])
def test_response_header_version(cls: type[Message], version: int) -> None:
    if cls.API_KEY == ApiKey.API_VERSIONS:
        expected = 0
    else:
        expected = 1 if version in cls.FLEXIBLE else 0
    assert response_header_version(cls.API_KEY, version) == expected


def test_api_versions_response_header_is_v0_even_when_the_body_is_flexible() -> None:
    assert is_flexible(ApiKey.API_VERSIONS, 3)
    frame = encode_response(ApiVersionsResponse(error_code=0, throttle_time_ms=7), 3, correlation_id=42)
    # size, correlation id, then the body at once: no tagged-field byte between header and body.
    body = ApiVersionsResponse(error_code=0, throttle_time_ms=7).encode(3)
    assert frame == struct.pack(">ii", 4 + len(body), 42) + body
    assert decode_response(frame[4:], ApiKey.API_VERSIONS, 3) == (42, ApiVersionsResponse.decode(body, 3))


def test_flexible_response_header_has_tagged_fields() -> None:
    frame = encode_response(RESPONSES[ApiKey.METADATA](), 12, correlation_id=7)
    assert frame[4:9] == struct.pack(">i", 7) + b"\x00"


def test_controlled_shutdown_v0_request_header_has_no_client_id() -> None:
    body = ControlledShutdownRequest(broker_id=3)
    frame = encode_request(body, 0, correlation_id=9, client_id="ignored")
    assert frame == struct.pack(">ihhii", 12, ApiKey.CONTROLLED_SHUTDOWN, 0, 9, 3)
    header, decoded = decode_request(frame[4:])
    assert (header.correlation_id, header.client_id, decoded.broker_id) == (9, "", 3)
    # v1 has a client id again (header v1).
    frame = encode_request(body, 1, correlation_id=9, client_id="c")
    assert frame[4:] == struct.pack(">hhih", ApiKey.CONTROLLED_SHUTDOWN, 1, 9, 1) + b"c" + struct.pack(
        ">i", 3
    )


def test_flexible_request_header_v2() -> None:
    request = MetadataRequest(topics=[MetadataRequestTopic(name="t")])
    frame = encode_request(request, 12, correlation_id=5, client_id="cli")
    # The client id stays a classic int16-length string; the header ends with its tagged fields.
    header_bytes = struct.pack(">hhih", ApiKey.METADATA, 12, 5, 3) + b"cli" + b"\x00"
    assert frame[4 : 4 + len(header_bytes)] == header_bytes
    assert frame[4 + len(header_bytes) :] == request.encode(12)
    header, body = decode_request(frame[4:])
    assert header == RequestHeader(
        request_api_key=3, request_api_version=12, correlation_id=5, client_id="cli"
    )
    assert body == request


def test_request_header_keeps_unknown_tagged_fields() -> None:
    header_bytes = struct.pack(">hhih", ApiKey.METADATA, 12, 5, -1) + bytes([2, 1, 2, 0xAB, 0xCD, 7, 0])
    frame = header_bytes + MetadataRequest(topics=None).encode(12)
    header, body = decode_request(frame)
    assert header.client_id is None
    assert header.unknown_tagged_fields == {1: b"\xab\xcd", 7: b""}
    assert header.encode(2) == header_bytes
    assert body == MetadataRequest(topics=None)


def test_api_versions_request_newer_than_known_is_read_with_a_flexible_header() -> None:
    newest = ApiVersionsRequest.VERSIONS.high
    future = newest + 5
    header_bytes = struct.pack(">hhih", ApiKey.API_VERSIONS, future, 77, 4) + b"java" + bytes([1, 0, 1, 0xFF])
    frame = header_bytes + b"body of a version we do not know"
    assert request_header_version(ApiKey.API_VERSIONS, future) == 2
    with pytest.raises(UnsupportedRequestError) as caught:
        decode_request(frame)
    error = caught.value
    assert isinstance(error, CodecError)
    expected = RequestHeader(
        request_api_key=ApiKey.API_VERSIONS, request_api_version=future, correlation_id=77, client_id="java"
    )
    expected.unknown_tagged_fields = {0: b"\xff"}
    assert error.header == expected
    assert error.body_offset == len(header_bytes)


def test_unknown_api_key_carries_its_header() -> None:
    frame = struct.pack(">hhih", 999, 0, 1234, 2) + b"me" + b"whatever"
    with pytest.raises(UnsupportedRequestError) as caught:
        decode_request(frame)
    assert caught.value.header.request_api_key == 999
    assert caught.value.header.correlation_id == 1234
    assert caught.value.header.client_id == "me"
    assert caught.value.body_offset == 12


def test_unsupported_version_of_a_known_api_carries_its_header() -> None:
    frame = struct.pack(">hhih", ApiKey.PRODUCE, -1, 8, -1)
    with pytest.raises(UnsupportedRequestError) as caught:
        decode_request(frame)
    assert caught.value.header.request_api_version == -1
    assert caught.value.header.client_id is None


# ----- every request and response at every version, through frames ----------------------------------


@pytest.mark.parametrize(("cls", "version"), REQUEST_CASES, ids=[_id(c) for c in REQUEST_CASES])
def test_request_frame_round_trip(cls: type[Message], version: int) -> None:
    frame = encode_request(cls(), version, correlation_id=-5, client_id="odradek-test")  # type: ignore[arg-type]
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    for view in (frame[4:], bytearray(frame[4:]), memoryview(frame)[4:]):
        header, body = decode_request(view)
        assert (header.request_api_key, header.request_api_version) == (cls.API_KEY, version)
        assert header.correlation_id == -5
        assert header.client_id == (
            "" if request_header_version(cls.API_KEY, version) == 0 else "odradek-test"
        )
        assert body == cls()


@pytest.mark.parametrize(("cls", "version"), RESPONSE_CASES, ids=[_id(c) for c in RESPONSE_CASES])
def test_response_frame_round_trip(cls: type[Message], version: int) -> None:
    frame = encode_response(cls(), version, correlation_id=2**31 - 1)  # type: ignore[arg-type]
    assert struct.unpack_from(">i", frame) == (len(frame) - 4,)
    assert decode_response(memoryview(frame)[4:], cls.API_KEY, version) == (2**31 - 1, cls())


def test_a_response_frame_in_a_bytearray_keeps_its_records_in_place() -> None:
    """A replica fetcher's frame: its records become a view of it, not a copy (bytes frames copy once)."""
    records = b"\x00" * 8 + struct.pack(">i", 61) + b"\x02" * 61  # opaque to the codec
    body = FetchResponse(
        responses=[FetchableTopicResponse(topic="t", partitions=[PartitionData(records=records)])]
    )
    frame = bytearray(encode_response(body, 11, correlation_id=5)[4:])
    _, decoded = decode_response(frame, ApiKey.FETCH, 11)
    in_place = decoded.responses[0].partitions[0].records
    assert isinstance(in_place, memoryview) and in_place.obj is frame
    assert in_place == records
    _, copied = decode_response(bytes(frame), ApiKey.FETCH, 11)
    assert copied.responses[0].partitions[0].records == records


def test_several_responses_share_one_buffer() -> None:
    out = bytearray()
    encode_response_into(out, ApiVersionsResponse(), 3, 1)
    encode_response_into(out, RESPONSES[ApiKey.METADATA](), 12, 2)
    (first,) = struct.unpack_from(">i", out)
    assert decode_response(out[4 : 4 + first], ApiKey.API_VERSIONS, 3)[0] == 1
    assert decode_response(out[8 + first :], ApiKey.METADATA, 12)[0] == 2


# ----- the same frames as kafka-python writes them ----------------------------------------------------

SHARED_REQUESTS = [(cls, v) for cls, v in shared_cases() if cls.KIND == "request"]
SHARED_RESPONSES = [(cls, v) for cls, v in shared_cases() if cls.KIND == "response"]


@pytest.mark.parametrize(("cls", "version"), SHARED_REQUESTS, ids=[_id(c) for c in SHARED_REQUESTS])
def test_request_frame_matches_kafka_python(cls: type[Message], version: int) -> None:
    theirs = to_kafka_python(cls(), version)
    theirs.with_header(correlation_id=31, client_id="same-client")
    expected = bytes(theirs.encode(version=version, header=True, framed=True))
    assert encode_request(cls(), version, correlation_id=31, client_id="same-client") == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("cls", "version"), SHARED_RESPONSES, ids=[_id(c) for c in SHARED_RESPONSES])
def test_response_frame_matches_kafka_python(cls: type[Message], version: int) -> None:
    theirs = to_kafka_python(cls(), version)
    theirs.with_header(correlation_id=31)
    # The version was set when building `theirs`: kafka-python's encode(version=...) on a response with a
    # header fails (it writes request_api_version into the response header).
    expected = bytes(theirs.encode(header=True, framed=True))
    assert encode_response(cls(), version, correlation_id=31) == expected  # type: ignore[arg-type]
    parsed = kafka_python_class(cls).decode(expected[4:], version=version, header=True)  # type: ignore[union-attr]
    assert parsed.header.correlation_id == 31


# ----- bad frames --------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", range(8))
def test_frame_shorter_than_a_header(length: int) -> None:
    with pytest.raises(TruncatedError):
        decode_request(struct.pack(">hhih", 3, 12, 1, 0)[:length])


def test_client_id_longer_than_the_frame() -> None:
    with pytest.raises(TruncatedError):
        decode_request(struct.pack(">hhih", 3, 1, 1, 100) + b"short")


def test_trailing_bytes_after_a_request_body_are_ignored_as_kafka_does() -> None:
    frame = encode_request(MetadataRequest(topics=[]), 1, correlation_id=1)
    header, body = decode_request(frame[4:] + b"\x00")
    assert header.correlation_id == 1 and body.topics == []


def test_trailing_bytes_after_a_response_body_are_an_error() -> None:
    frame = encode_response(MetadataResponse(), 1, correlation_id=1)
    with pytest.raises(CodecError, match="trailing"):
        decode_response(frame[4:] + b"\x00", ApiKey.METADATA, 1)


def test_response_of_unknown_api_or_version() -> None:
    with pytest.raises(CodecError):
        decode_response(struct.pack(">i", 1), 999, 0)
    with pytest.raises(CodecError):
        decode_response(struct.pack(">i", 1), ApiKey.METADATA, 99)
