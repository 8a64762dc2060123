"""An unsigned varint of five bytes carrying more than 32 bits was accepted.

The fifth byte of a 32-bit varint holds only bits 28-31, but `read_uvarint` took all seven of its bits,
so a tagged field numbered up to 2^35-1 decoded fine and then could not be encoded again (the encoder,
rightly, writes only 32-bit varints): a message the codec had accepted made it raise on the way out.
"""

from __future__ import annotations

import pytest

from odradek.protocol.codec_error import CodecError
from odradek.protocol.messages.fetch import FetchRequest
from odradek.protocol.varint import read_uvarint, uvarint_bytes

VERSION = 12


def _with_unknown_tag(tag_varint: bytes) -> bytes:
    plain = FetchRequest().encode(VERSION)
    assert plain.endswith(b"\x00")  # an empty tagged-field section
    return plain[:-1] + b"\x01" + tag_varint + b"\x01\xaa"


def test_largest_32_bit_tag_round_trips() -> None:
    assert uvarint_bytes(2**32 - 1) == b"\xff\xff\xff\xff\x0f"
    decoded = FetchRequest.decode(_with_unknown_tag(b"\xff\xff\xff\xff\x0f"), VERSION)
    assert decoded.unknown_tagged_fields == {2**32 - 1: b"\xaa"}
    assert decoded.encode(VERSION) == _with_unknown_tag(b"\xff\xff\xff\xff\x0f")


@pytest.mark.parametrize("fifth_byte", [0x10, 0x40, 0x7F])
def test_tag_beyond_32_bits_is_rejected(fifth_byte: int) -> None:
    with pytest.raises(CodecError):
        FetchRequest.decode(_with_unknown_tag(b"\xff\xff\xff\xff" + bytes([fifth_byte])), VERSION)


def test_read_uvarint_range() -> None:
    assert read_uvarint(b"\xff\xff\xff\xff\x0f", 0) == (2**32 - 1, 5)
    with pytest.raises(CodecError):
        read_uvarint(b"\x80\x80\x80\x80\x10", 0)
