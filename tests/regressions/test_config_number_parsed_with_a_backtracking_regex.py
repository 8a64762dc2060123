"""Config values come from clients (CreateTopics, AlterConfigs, IncrementalAlterConfigs). A DOUBLE was
checked with a regex that backtracks quadratically (`\\d+\\.?\\d*`): `min.cleanable.dirty.ratio` set to
20,000 digits and an `x` held the event loop for 22 s (100,000 digits: about ten minutes). An integer of
more than 4300 digits made Python's int() raise ValueError (its conversion limit): an unexpected
error, answered UNKNOWN_SERVER_ERROR, where Kafka answers INVALID_CONFIG "Not a number of type INT"."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import odradek.handlers  # noqa: F401 - registers every handler
from odradek.config.types import ConfigError, ConfigType, parse_value
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(60)
DIGITS = "1" * 100_000


@pytest.mark.parametrize("value", [DIGITS + "x", DIGITS + ".5x", "." + DIGITS + "e", DIGITS + "e+"])
def test_a_long_value_that_is_not_a_double_is_refused_without_backtracking(value: str) -> None:
    with pytest.raises(ConfigError, match="Not a number of type DOUBLE"):
        parse_value("min.cleanable.dirty.ratio", ConfigType.DOUBLE, value)


def test_doubles_kafka_accepts_still_parse() -> None:
    for text, expected in [
        ("0.5", 0.5),
        ("5", 5.0),
        ("+.5", 0.5),
        ("5.", 5.0),
        ("1e3", 1000.0),
        ("-2.5E-1", -0.25),
    ]:
        assert parse_value("ratio", ConfigType.DOUBLE, text) == expected
    assert parse_value("ratio", ConfigType.DOUBLE, DIGITS) == float(DIGITS)


@pytest.mark.parametrize("config_type", [ConfigType.SHORT, ConfigType.INT, ConfigType.LONG])
def test_an_integer_of_more_digits_than_python_converts_was_an_unexpected_error(
    config_type: ConfigType,
) -> None:
    for value in (DIGITS, "-" + DIGITS, "-1" + "0" * 19):
        with pytest.raises(ConfigError, match=f"Not a number of type {config_type.name}"):
            parse_value("segment.ms", config_type, value)
    # leading zeros are digits Java's parsers accept, however many
    assert parse_value("segment.ms", config_type, "0" * 5000 + "42") == 42
    assert parse_value("segment.ms", config_type, "-" + "0" * 5000 + "42") == -42


def test_a_broker_resource_named_with_thousands_of_digits_was_an_unexpected_error(tmp_path: Path) -> None:
    asyncio.run(_describe_broker_named_digits(tmp_path))


async def _describe_broker_named_digits(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        resource = DescribeConfigsResource(
            resource_type=4, resource_name=DIGITS[:5000], configuration_keys=None
        )
        [result] = (await broker.call(DescribeConfigsRequest(resources=[resource]), 4)).results
        assert (result.error_code, result.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Broker id must be an integer, but it is: " + DIGITS[:5000],
        )
        this_broker = DescribeConfigsResource(
            resource_type=4, resource_name="0" * 5000 + "1", configuration_keys=None
        )
        [found] = (await broker.call(DescribeConfigsRequest(resources=[this_broker]), 4)).results
        assert found.error_code == ErrorCode.NONE and found.configs  # Java's parseInt reads it: broker 1
    finally:
        broker.close()
