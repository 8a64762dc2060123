"""The one place where exceptions inside the broker become Kafka error codes at the protocol edge."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Protocol

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import UnsupportedCompressionError
from odradek.storage import errors as storage

log = logging.getLogger("odradek.handlers")


class _Header(Protocol):
    @property
    def request_api_key(self) -> int: ...


class _ErrorCounts(Protocol):
    @property
    def unexpected_errors(self) -> Counter[int]: ...


class FailingRequest(Protocol):
    """What `resource_failure` reads of the request being answered (a handler's RequestContext)."""

    @property
    def header(self) -> _Header: ...

    @property
    def services(self) -> _ErrorCounts: ...

    @property
    def client_host(self) -> str: ...

    @property
    def client_port(self) -> int: ...


_STORAGE_CODES: dict[type[BaseException], ErrorCode] = {
    storage.OffsetOutOfRangeError: ErrorCode.OFFSET_OUT_OF_RANGE,
    storage.CorruptRecordError: ErrorCode.CORRUPT_MESSAGE,
    storage.InvalidRecordError: ErrorCode.INVALID_RECORD,
    storage.InvalidTimestampError: ErrorCode.INVALID_TIMESTAMP,
    storage.RecordTooLargeError: ErrorCode.MESSAGE_TOO_LARGE,
    storage.RecordListTooLargeError: ErrorCode.RECORD_LIST_TOO_LARGE,
    storage.OutOfOrderSequenceError: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    storage.InvalidProducerEpochError: ErrorCode.INVALID_PRODUCER_EPOCH,
    storage.UnknownProducerIdError: ErrorCode.UNKNOWN_PRODUCER_ID,
    storage.InvalidTxnStateError: ErrorCode.INVALID_TXN_STATE,
    storage.TransactionCoordinatorFencedError: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    storage.LogStorageError: ErrorCode.KAFKA_STORAGE_ERROR,
    storage.InvalidLogConfigError: ErrorCode.INVALID_CONFIG,
}


#: Codes whose detail stays in the broker's log.
_BROKERS_OWN = frozenset({ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.KAFKA_STORAGE_ERROR})
#: Refusals by a producer id's state, whose detail (its epoch, its last sequence) any writer could read
#: by naming that id: Kafka sends no message with them.
_PRODUCER_STATE = frozenset(
    {
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.UNKNOWN_PRODUCER_ID,
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    }
)


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
    """The detail a response with an error message field sends along: None for unexpected errors and
    failed disks, whose text (paths, errno) is the broker's, and for a producer's state, as Kafka sends
    no message with any of them."""
    if isinstance(error, KafkaError):
        return error.error_message
    code = error_code_for(error)
    if code in _BROKERS_OWN or code in _PRODUCER_STATE:
        return None
    return str(error)


def resource_failure(
    error: Exception, context: FailingRequest, resource: str
) -> tuple[ErrorCode, str | None]:
    """The code and message answering one resource's failure inside a request (a topic of an admin
    request, a partition of a Produce; the others are still answered, as in Kafka). An unexpected
    exception reaches the client as a bare UNKNOWN_SERVER_ERROR, so it is logged here with its traceback
    and counted in the metrics; a failed disk as a bare KAFKA_STORAGE_ERROR, so it is logged with its
    reason."""
    code = error_code_for(error)
    if code is ErrorCode.KAFKA_STORAGE_ERROR and not isinstance(error, KafkaError):
        log.error(
            "storage failed handling %s for %s: %s",
            ApiKey(context.header.request_api_key).name,
            resource,
            error,
            extra={"fields": {"client": f"{context.client_host}:{context.client_port}"}},
        )
    if code is ErrorCode.UNKNOWN_SERVER_ERROR:
        api_key = context.header.request_api_key
        context.services.unexpected_errors[api_key] += 1
        log.error(
            "unexpected error handling %s for %s",
            ApiKey(api_key).name,
            resource,
            exc_info=error,
            extra={"fields": {"client": f"{context.client_host}:{context.client_port}"}},
        )
    return code, error_message_for(error)
