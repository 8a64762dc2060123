"""CLIENT_METRICS config resources (KIP-714): what Kafka's ClientMetricsConfigs accepts and refuses."""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.telemetry.subscriptions import DEFAULT_INTERVAL_MS, ClientAttributes, subscription


def _refused(name: str, configs: dict[str, str]) -> tuple[ErrorCode, str | None]:
    with pytest.raises(KafkaError) as refused:
        subscription(name, configs)
    return refused.value.error_code, refused.value.error_message


def test_a_subscription_takes_kafkas_defaults_for_what_it_does_not_set() -> None:
    found = subscription("everything", {"metrics": "*"})
    assert found.metrics == frozenset({"*"})
    assert found.interval_ms == DEFAULT_INTERVAL_MS == 300_000
    assert found.match == {}


def test_an_unknown_client_metrics_config_is_an_invalid_request() -> None:
    assert _refused("s", {"metrics": "a", "interval": "1000"}) == (
        ErrorCode.INVALID_REQUEST,
        "Unknown client metrics configuration: interval",
    )


def test_an_empty_subscription_name_is_an_invalid_request() -> None:
    assert _refused("", {"metrics": "a"}) == (ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")


@pytest.mark.parametrize("interval", ["99", "3600001", "-1"])
def test_a_push_interval_outside_100_ms_to_one_hour_is_an_invalid_request(interval: str) -> None:
    code, message = _refused("s", {"interval.ms": interval})
    assert code == ErrorCode.INVALID_REQUEST
    assert message == (
        f"Invalid value {interval} for interval.ms, interval must be between 100 and 3600000 (1 hour)"
    )


def test_a_push_interval_that_is_not_an_int_is_an_invalid_config() -> None:
    code, message = _refused("s", {"interval.ms": "soon"})
    assert code == ErrorCode.INVALID_CONFIG
    assert message is not None and "interval.ms" in message


@pytest.mark.parametrize(
    "pattern",
    [
        "client_id",  # no '='
        "client_id=a=b",  # Java's split("=") gives three parts
        "user=alice",  # not a client attribute
        "client_id=(?=lookahead)",  # RE2 refuses what it cannot run in linear time
        "client_id=[unclosed",
    ],
)
def test_an_illegal_match_pattern_is_an_invalid_config(pattern: str) -> None:
    assert _refused("s", {"match": pattern}) == (
        ErrorCode.INVALID_CONFIG,
        f"Illegal client matching pattern: {pattern}",
    )


def test_duplicated_metrics_are_an_invalid_config() -> None:
    code, _ = _refused("s", {"metrics": "org.apache.kafka.producer, org.apache.kafka.producer"})
    assert code == ErrorCode.INVALID_CONFIG


def test_match_patterns_must_match_every_named_attribute_whole() -> None:
    found = subscription("s", {"match": "client_id=producer-.*, client_software_name=apache-kafka-java"})
    java = ClientAttributes("id", "producer-1", "apache-kafka-java", "4.4.0", "127.0.0.1", 5000)
    assert found.matches(java)
    assert not found.matches(java._replace(client_id="my-producer-1"))  # whole value, not a search
    assert not found.matches(java._replace(client_software_name=None))  # unknown never matches


def test_a_subscription_with_no_match_patterns_matches_every_client() -> None:
    anyone = ClientAttributes("id", None, None, None, "127.0.0.1", 5000)
    assert subscription("s", {"metrics": "a"}).matches(anyone)


def test_a_match_pattern_longer_than_the_regex_bound_is_refused_uncompiled() -> None:
    pattern = "client_id=" + "a" * 16_385
    code, message = _refused("s", {"match": pattern})
    assert code == ErrorCode.INVALID_CONFIG
    assert message is not None and message.startswith("Illegal client matching pattern: client_id=aaa")
    assert len(message) < 200  # the refusal does not echo the whole pattern
