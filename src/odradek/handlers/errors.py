"""The one place where exceptions inside the broker become Kafka error codes at the protocol edge."""

from __future__ import annotations

from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import UnsupportedCompressionError
from odradek.storage import errors as storage

_STORAGE_CODES: dict[type[BaseException], ErrorCode] = {
    storage.OffsetOutOfRangeError: ErrorCode.OFFSET_OUT_OF_RANGE,
    storage.CorruptRecordError: ErrorCode.CORRUPT_MESSAGE,
    storage.InvalidRecordError: ErrorCode.INVALID_RECORD,
    storage.InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    storage.RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    storage.OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    storage.InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    storage.UnknownProducerIdError: ErrorCode.UNKNOWN_PRODUCER_ID,
    storage.InvalidTxnStateError: ErrorCode.INVALID_TXN_STATE,
    storage.TransactionCoordinatorFencedError: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    storage.LogStorageError: ErrorCode.KAFKA_STORAGE_ERROR,
    storage.InvalidLogConfigError: ErrorCode.INVALID_CONFIG,
}


def error_code_for(error: BaseException) -> ErrorCode:
    """The code a response carries for `error` (UNKNOWN_SERVER_ERROR for anything unexpected)."""
    if isinstance(error, KafkaError):
        return error.error_code
    for kind in type(error).__mro__:
        code = _STORAGE_CODES.get(kind)
        if code is not None:
            return code
    if isinstance(error, UnsupportedCompressionError):
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    if isinstance(error, CodecError):
        return ErrorCode.CORRUPT_MESSAGE
    return ErrorCode.UNKNOWN_SERVER_ERROR


def error_message_for(error: BaseException) -> str | None:
    """The detail a response with an error message field sends along (None for unexpected errors)."""
    if isinstance(error, KafkaError):
        return error.error_message
    if error_code_for(error) is ErrorCode.UNKNOWN_SERVER_ERROR:
        return None
    return str(error)
