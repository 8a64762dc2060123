"""Parsing string settings into typed values, validators, and Kafka-compatible formatting."""

from __future__ import annotations

import re

import pytest

from odradek.config.types import (
    ConfigError,
    ConfigKey,
    ConfigType,
    ConfigValue,
    Importance,
    Password,
    Validator,
    format_value,
    java_double_string,
    parse_value,
)
from odradek.config.validators import (
    THROTTLED_REPLICAS,
    NonEmptyString,
    RangeOrValue,
    at_least,
    between,
    list_of,
    one_of,
)


@pytest.mark.parametrize(
    ("config_type", "raw", "expected"),
    [
        (ConfigType.BOOLEAN, " TRUE ", True),
        (ConfigType.BOOLEAN, "false", False),
        (ConfigType.INT, " 42 ", 42),
        (ConfigType.INT, "+7", 7),
        (ConfigType.SHORT, "-1", -1),
        (ConfigType.LONG, "9223372036854775807", 2**63 - 1),
        (ConfigType.DOUBLE, "0.5", 0.5),
        (ConfigType.DOUBLE, "1e3", 1000.0),
        (ConfigType.STRING, "  CreateTime ", "CreateTime"),
        (ConfigType.CLASS, "org.example.Policy", "org.example.Policy"),
        (ConfigType.LIST, "compact, delete", ["compact", "delete"]),
        (ConfigType.LIST, "   ", []),
    ],
)
def test_parse_value(config_type: ConfigType, raw: str, expected: object) -> None:
    assert parse_value("some.config", config_type, raw) == expected


@pytest.mark.parametrize(
    ("config_type", "raw", "reason"),
    [
        (ConfigType.BOOLEAN, "yes", "Expected value to be either true or false"),
        (ConfigType.INT, "12abc", "Not a number of type INT"),
        (ConfigType.INT, "1_000", "Not a number of type INT"),
        (ConfigType.INT, "2147483648", "Not a number of type INT"),
        (ConfigType.SHORT, "40000", "Not a number of type SHORT"),
        (ConfigType.LONG, "1.5", "Not a number of type LONG"),
        (ConfigType.DOUBLE, "half", "Not a number of type DOUBLE"),
    ],
)
def test_parse_errors_use_kafka_wording(config_type: ConfigType, raw: str, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_value("some.config", config_type, raw)
    assert str(caught.value) == f"Invalid value {raw} for configuration some.config: {reason}"
    assert caught.value.name == "some.config"


def test_password_never_shows_its_value() -> None:
    secret = parse_value("ssl.key.password", ConfigType.PASSWORD, " s3cret ")
    assert isinstance(secret, Password)
    assert secret.value == "s3cret"
    assert "s3cret" not in str(secret) + repr(secret)
    assert format_value(ConfigType.PASSWORD, secret) is None
    assert "s3cret" not in str(ConfigError.invalid_value("ssl.key.password", secret, "bad"))


@pytest.mark.parametrize(
    ("validator", "good", "bad", "reason", "described"),
    [
        (at_least(-1), -1, -2, "Value must be at least -1", "[-1,...]"),
        (between(0, 1), 0.5, 1.5, "Value must be no more than 1", "[0,...,1]"),
        (RangeOrValue(1, 9, -1), -1, 0, "Value must be between 1 and 9 or equal to -1", "[1,...,9] or -1"),
        (
            one_of("CreateTime", "LogAppendTime"),
            "CreateTime",
            "createtime",
            "String must be one of: CreateTime, LogAppendTime",
            "[CreateTime, LogAppendTime]",
        ),
        (
            list_of("compact", "delete"),
            ["delete", "compact"],
            ["delete", "shred"],
            "String must be one of: compact, delete",
            "[compact, delete]",
        ),
        (NonEmptyString(), "x", " ", "String must be non-empty", "non-empty string"),
        (
            THROTTLED_REPLICAS,
            ["0:1", "1:2"],
            ["0-1"],
            "x.y must be the literal '*' or a list of replicas in the following format: "
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
            "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
    ],
)
def test_validators(
    validator: Validator, good: ConfigValue, bad: ConfigValue, reason: str, described: str
) -> None:
    validator("x.y", good)
    with pytest.raises(ConfigError, match=re.escape(reason)):
        validator("x.y", bad)
    assert validator.describe() == described


def test_case_insensitive_choice_and_wildcard() -> None:
    one_of("upgrade", "downgrade", case_sensitive=False)("p", "UPGRADE")
    THROTTLED_REPLICAS("t", ["*"])
    THROTTLED_REPLICAS("t", [])


def test_config_key_parse_validates() -> None:
    key = ConfigKey("retention.ms", ConfigType.LONG, 1, Importance.MEDIUM, "doc", at_least(-1))
    assert key.parse("-1") == -1
    assert key.valid_values == "[-1,...]"
    with pytest.raises(
        ConfigError,
        match=re.escape("Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ):
        key.parse("-2")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1.0, "1.0"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (1e7, "1.0E7"),
        (2.5e-5, "2.5E-5"),
    ],
)
def test_doubles_format_like_java(value: float, text: str) -> None:
    assert java_double_string(value) == text


def test_format_value() -> None:
    assert format_value(ConfigType.BOOLEAN, True) == "true"
    assert format_value(ConfigType.LIST, ["compact", "delete"]) == "compact,delete"
    assert format_value(ConfigType.LONG, 604800000) == "604800000"
    assert format_value(ConfigType.STRING, None) is None
