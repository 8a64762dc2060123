"""ErrorCode and KafkaError: Kafka's codes, names and retriable flags, cross-checked with kafka-python."""

from __future__ import annotations

import inspect
from typing import Any

import kafka.errors
import pytest

from odradek.protocol.error_codes import ErrorCode, KafkaError, error_code_of

# kafka-python still uses a few names that Kafka itself has since renamed; the code is what matters.
KAFKA_PYTHON_OLD_NAMES = {
    "UNKNOWN": "UNKNOWN_SERVER_ERROR",
    "NO_ERROR": "NONE",
    "NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
    "MESSAGE_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE",
    "INVALID_TOPIC": "INVALID_TOPIC_EXCEPTION",
    "INVALID_REPLICATION_ASSIGNMENT": "INVALID_REPLICA_ASSIGNMENT",
}


def _kafka_python_codes() -> dict[int, str]:
    codes: dict[int, str] = {}
    cls: Any
    for _, cls in inspect.getmembers(kafka.errors, inspect.isclass):
        if issubclass(cls, kafka.errors.BrokerResponseError) and cls.errno is not None:
            codes[cls.errno] = cls.message
    return codes


def test_codes_are_unique_and_cover_kafka_4() -> None:
    values = [member.value for member in ErrorCode]
    assert len(values) == len(set(values))
    assert len(ErrorCode.__members__) == len(values)  # no aliases hiding a duplicate
    assert min(values) == -1
    assert max(values) >= 133
    assert sorted(values) == list(range(-1, max(values) + 1))


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("UNKNOWN_SERVER_ERROR", -1),
        ("NONE", 0),
        ("OFFSET_OUT_OF_RANGE", 1),
        ("CORRUPT_MESSAGE", 2),
        ("UNKNOWN_TOPIC_OR_PARTITION", 3),
        ("NOT_LEADER_OR_FOLLOWER", 6),
        ("MESSAGE_TOO_LARGE", 10),
        ("TOPIC_ALREADY_EXISTS", 36),
        ("INVALID_CONFIG", 40),
        ("PRODUCER_FENCED", 90),
        ("UNKNOWN_TOPIC_ID", 100),
        ("STALE_MEMBER_EPOCH", 113),
        ("SHARE_SESSION_LIMIT_REACHED", 133),
    ],
)
def test_known_names(name: str, code: int) -> None:
    assert ErrorCode[name].value == code


@pytest.mark.parametrize(
    ("code", "retriable"),
    [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, True),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, True),
        (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, True),
        (ErrorCode.NOT_ENOUGH_REPLICAS, True),
        (ErrorCode.CORRUPT_MESSAGE, True),
        (ErrorCode.TOPIC_ALREADY_EXISTS, False),
        (ErrorCode.INVALID_CONFIG, False),
        (ErrorCode.UNKNOWN_MEMBER_ID, False),
        (ErrorCode.REBALANCE_IN_PROGRESS, False),
        (ErrorCode.NONE, False),
    ],
)
def test_retriable_flags(code: ErrorCode, retriable: bool) -> None:
    assert code.retriable is retriable


def test_every_code_has_a_description() -> None:
    for member in ErrorCode:
        assert isinstance(member.message, str)
        assert member.message or member is ErrorCode.NONE


def test_agrees_with_kafka_python() -> None:
    theirs = _kafka_python_codes()
    assert len(theirs) > 100
    for code, their_name in theirs.items():
        assert ErrorCode(code).name == KAFKA_PYTHON_OLD_NAMES.get(their_name, their_name), code


def test_unknown_wire_code_reads_as_unknown_server_error() -> None:
    assert ErrorCode.for_code(3) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert ErrorCode.for_code(32000) is ErrorCode.UNKNOWN_SERVER_ERROR


def test_kafka_error_carries_code_and_detail() -> None:
    with pytest.raises(KafkaError) as caught:
        raise KafkaError(ErrorCode.INVALID_CONFIG, "retention.ms must be >= -1")
    error = caught.value
    assert error.error_code is ErrorCode.INVALID_CONFIG
    assert error.error_message == "retention.ms must be >= -1"
    assert not error.retriable
    assert str(error) == "INVALID_CONFIG: retention.ms must be >= -1"
    assert error_code_of(error) is ErrorCode.INVALID_CONFIG


def test_kafka_error_without_detail() -> None:
    error = KafkaError(ErrorCode.NOT_COORDINATOR)
    assert error.error_message is None
    assert error.retriable
    assert ErrorCode.NOT_COORDINATOR.message in str(error)


def test_any_other_exception_maps_to_unknown_server_error() -> None:
    assert error_code_of(RuntimeError("boom")) is ErrorCode.UNKNOWN_SERVER_ERROR
