"""Whole frames: size prefix, request/response header, body.

Header versions follow Kafka's rules: a request header is v2 (with tagged fields) for flexible API
versions and v1 otherwise, except ControlledShutdown v0, whose header is v0 (no client id); a response
header is v1 for flexible versions and v0 otherwise, except ApiVersions, whose response header is always
v0 so that a client that does not yet know the broker's versions can read it.
"""

from __future__ import annotations

import struct
from typing import Any, Final

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec import decode_body, decode_from, encode_into_for
from odradek.protocol.codec_error import CodecError, TruncatedError
from odradek.protocol.messages import REQUESTS, RESPONSES
from odradek.protocol.messages.request_header import RequestHeader
from odradek.protocol.messages.response_header import ResponseHeader
from odradek.protocol.schema import Request, Response

_API_KEY_AND_VERSION: Final = struct.Struct(">hh")
_SIZE: Final = struct.Struct(">i")


class UnsupportedRequestError(CodecError):
    """A well-formed header for an API key or version this codec does not know; the header is kept."""

    def __init__(self, header: RequestHeader, body_offset: int, message: str) -> None:
        super().__init__(message)
        self.header = header
        self.body_offset = body_offset


def is_flexible(api_key: int, api_version: int) -> bool:
    """Whether a request/response of this API at this version uses compact types and tagged fields.

    Versions above the newest we know count as flexible when the newest is: that is how a broker reads
    the header of an ApiVersions request from a client newer than itself.
    """
    request = REQUESTS.get(api_key)
    if request is None:
        return False
    version = min(api_version, request.VERSIONS.high)
    return version in request.FLEXIBLE


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def read_request_header(frame: bytes | bytearray) -> tuple[RequestHeader, int]:
    """Decode the header of a request frame (without its size prefix); returns it and the body offset."""
    if len(frame) < 8:
        raise TruncatedError("request frame shorter than a request header")
    api_key, api_version = _API_KEY_AND_VERSION.unpack_from(frame, 0)
    header: RequestHeader
    header, offset = decode_from(RequestHeader, frame, 0, request_header_version(api_key, api_version))
    return header, offset


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Any]:
    """Decode a request frame (without its size prefix) into its header and body.

    Raises UnsupportedRequestError (a CodecError that carries the header) for an API key or version the
    codec does not define, and CodecError for anything malformed.
    """
    if frame.__class__ is not bytes and frame.__class__ is not bytearray:
        frame = bytes(frame)
    header, offset = read_request_header(frame)
    request = REQUESTS.get(header.request_api_key)
    if request is None:
        raise UnsupportedRequestError(header, offset, f"unknown api key {header.request_api_key}")
    if header.request_api_version not in request.VERSIONS:
        raise UnsupportedRequestError(
            header, offset, f"{request.__name__} has no version {header.request_api_version}"
        )
    # Bytes after the body are ignored, as Apache Kafka does: librdkafka pads its all-topics Metadata
    # v9+ request (a 4-byte placeholder for a 1-byte compact count).
    body = decode_body(request, frame, header.request_api_version, start=offset, allow_trailing=True)
    return header, body


def encode_request(
    body: Request, api_version: int, correlation_id: int, client_id: str | None = "odradek"
) -> bytes:
    """A size-prefixed request frame."""
    api_key = body.API_KEY
    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    out = bytearray(4)
    encode_into_for(RequestHeader, request_header_version(api_key, api_version))(header, out)
    encode_into_for(type(body), api_version)(body, out)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response_into(out: bytearray, body: Response, api_version: int, correlation_id: int) -> None:
    """Append a size-prefixed response frame to `out` (several responses can share one buffer)."""
    start = len(out)
    spliced_before = spliced_length(out)
    out += b"\0\0\0\0"
    header_version = response_header_version(body.API_KEY, api_version)
    encode_into_for(ResponseHeader, header_version)(ResponseHeader(correlation_id=correlation_id), out)
    encode_into_for(type(body), api_version)(body, out)
    spliced = spliced_length(out) - spliced_before
    _SIZE.pack_into(out, start, len(out) - start - 4 + spliced)


def spliced_length(out: bytearray) -> int:
    """Bytes that records values placed by reference (file regions) add to `out` without being in it."""
    length: int = getattr(out, "spliced_length", 0)
    return length


def encode_response(body: Response, api_version: int, correlation_id: int) -> bytes:
    """A size-prefixed response frame."""
    out = bytearray()
    encode_response_into(out, body, api_version, correlation_id)
    return bytes(out)


def decode_response(frame: bytes | bytearray | memoryview, api_key: int, api_version: int) -> tuple[int, Any]:
    """Decode a response frame (without its size prefix): returns (correlation id, body).

    As for requests, bytes and bytearray frames are read in place: a bytearray's records fields come
    back as views of it (a replica fetcher appends them without a copy)."""
    if frame.__class__ is not bytes and frame.__class__ is not bytearray:
        frame = bytes(frame)
    response = RESPONSES.get(api_key)
    if response is None:
        raise CodecError(f"unknown api key {api_key}")
    header: ResponseHeader
    header, offset = decode_from(ResponseHeader, frame, 0, response_header_version(api_key, api_version))
    body = decode_body(response, frame, api_version, start=offset)
    return header.correlation_id, body
