"""The project's schema language: how a Kafka message is declared.

A message is a class whose attributes are field specifiers, in wire order:

    class ProduceRequest(Request, api_key=0, versions="0-13", flexible="9+"):
        class TopicProduceData(Struct):
            name: str = String("0-12")
            ...
        transactional_id: str | None = String("3+", nullable="3+", default=None)
        acks: int = Int16()
        topic_data: list[TopicProduceData] = Array(TopicProduceData)

Versions are written "N+" (from N on), "N-M", "N" or "none". A field present at no version of a
message is simply absent from the wire at that version and holds its default in decoded objects.
`odradek.protocol.compiler` writes one flat encode and one flat decode function per (class, version),
which `codec.py` compiles once and caches. The vocabulary (versions, field specifiers, `Struct`) is
defined in `fields.py`, below the compiler and the codec, and offered here; the message classes, whose
`encode` and `decode` call the codec, are defined here, above it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from odradek.protocol.codec import decode_body, encoder_for
from odradek.protocol.fields import (
    ALL_VERSIONS,
    NO_VERSIONS,
    OPEN_END,
    PRIMITIVE_KINDS,
    ZERO_UUID,
    Array,
    Bool,
    Bytes,
    FieldSpec,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Nested,
    Records,
    String,
    Struct,
    StructMeta,
    UInt16,
    UInt32,
    Uuid,
    VersionedStruct,
    Versions,
)

__all__ = [
    "ALL_VERSIONS",
    "NO_VERSIONS",
    "OPEN_END",
    "PRIMITIVE_KINDS",
    "ZERO_UUID",
    "Array",
    "Bool",
    "Bytes",
    "FieldSpec",
    "Float64",
    "Header",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Message",
    "Nested",
    "Records",
    "Request",
    "Response",
    "String",
    "Struct",
    "StructMeta",
    "UInt16",
    "UInt32",
    "Uuid",
    "Versions",
]


class Message(VersionedStruct):
    """A top-level message: a request, a response, or a versioned data structure."""

    __slots__ = ()

    def encode(self, version: int) -> bytes:
        """The body of this message at `version` (no header, no size prefix)."""
        return encoder_for(self.__class__, version)(self)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Any:
        """Decode a whole body at `version`; trailing bytes are an error."""
        return decode_body(cls, data, version)


class Request(Message):
    __slots__ = ()
    KIND: ClassVar[str] = "request"


class Response(Message):
    __slots__ = ()
    KIND: ClassVar[str] = "response"


class Header(Message):
    __slots__ = ()
    KIND: ClassVar[str] = "header"
