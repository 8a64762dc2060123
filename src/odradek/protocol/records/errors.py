"""Exceptions raised by the record formats; every one is a CodecError so servers catch a single type."""

from __future__ import annotations

from odradek.protocol.codec_error import CodecError, TruncatedError


class RecordsError(CodecError):
    """Record data (MessageSet v0/v1 or RecordBatch v2) that cannot be read or written."""


class RecordsTruncatedError(RecordsError, TruncatedError):
    """The buffer ended inside a batch, message or record."""


class CorruptRecordError(RecordsError):
    """Bytes that are structurally wrong: bad magic, impossible lengths, CRC mismatch, bad varints."""


class InvalidRecordsError(CorruptRecordError):
    """The records of a whole, CRC-valid batch that do not read as its header says: fewer or more than
    it declares, or malformed (Kafka's InvalidRecordException, INVALID_RECORD)."""


class UnsupportedCompressionError(RecordsError):
    """A compression codec that is unknown, or not allowed at this message format version."""


class CompressionError(RecordsError):
    """Compressed data that does not decompress (or data that a codec refused to compress)."""


class DecompressedSizeError(CompressionError):
    """Decompressed output would exceed the caller's limit (a guard against decompression bombs)."""


class CompressedSizeError(CompressionError):
    """Compressed output would exceed the caller's limit (a batch rewritten past max.message.bytes)."""


class TooManyRecordsError(RecordsError):
    """More records than the caller reads in one go (a bound on the work hostile input can cause)."""
