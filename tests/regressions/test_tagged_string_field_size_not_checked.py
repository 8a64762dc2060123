"""A known tagged field of kind string/bytes/records was read without checking its declared size.

The generated decoder kept the end of a tagged field in a variable that decoding a string also used for
the string's own end, so the check "the field ends where its size says" compared the string's end with
itself and always passed. A field whose size disagreed with its content was accepted, and the bytes
after the string were parsed as further tagged fields.
"""

from __future__ import annotations

import pytest

from odradek.protocol.codec_error import CodecError
from odradek.protocol.messages.fetch import FetchRequest

VERSION = 12


def _with_tagged_section(section: bytes) -> bytes:
    encoded = FetchRequest(cluster_id="abc").encode(VERSION)
    # The body ends with the tagged section: 1 field, tag 0, size 4, compact string "abc".
    assert encoded.endswith(bytes([1, 0, 4, 4]) + b"abc")
    return encoded[: -len(b"\x01\x00\x04\x04abc")] + section


def test_correct_size_decodes() -> None:
    decoded = FetchRequest.decode(_with_tagged_section(bytes([1, 0, 4, 4]) + b"abc"), VERSION)
    assert decoded.cluster_id == "abc"


def test_size_larger_than_the_string_is_rejected() -> None:
    # Field 0 claims 6 bytes but its string takes 4; the 2 left over would read as "tag 5, size 0".
    frame = _with_tagged_section(bytes([2, 0, 6, 4]) + b"abc" + bytes([5, 0]))
    with pytest.raises(CodecError, match="size does not match"):
        FetchRequest.decode(frame, VERSION)


def test_size_smaller_than_the_string_is_rejected() -> None:
    frame = _with_tagged_section(bytes([2, 0, 2, 4]) + b"abc" + bytes([5, 0]))
    with pytest.raises(CodecError):
        FetchRequest.decode(frame, VERSION)
