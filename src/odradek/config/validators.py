"""Validators for config values, with Kafka's "Valid Values" descriptions and error wording.

Every validator rejects a missing value (None) unless it says otherwise: only defaults can be None,
and those are not validated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from odradek.config.types import INT_MAX, ConfigError, ConfigValue


@dataclass(frozen=True, slots=True)
class Range:
    """A number no smaller than ``low`` and, when given, no larger than ``high``."""

    low: int | float | None
    high: int | float | None = None

    def __call__(self, name: str, value: ConfigValue) -> None:
        number = _number(name, value)
        if self.low is not None and number < self.low:
            raise ConfigError.invalid_value(name, value, f"Value must be at least {self.low}")
        if self.high is not None and number > self.high:
            raise ConfigError.invalid_value(name, value, f"Value must be no more than {self.high}")

    def describe(self) -> str:
        if self.high is None:
            return f"[{self.low},...]"
        if self.low is None:
            return f"[...,{self.high}]"
        return f"[{self.low},...,{self.high}]"


def at_least(low: int | float) -> Range:
    return Range(low)


def between(low: int | float, high: int | float) -> Range:
    return Range(low, high)


@dataclass(frozen=True, slots=True)
class RangeOrValue:
    """A number within [low, high] or exactly ``special`` (compression levels: [1,...,9] or -1)."""

    low: int
    high: int
    special: int

    def __call__(self, name: str, value: ConfigValue) -> None:
        number = _number(name, value)
        if number != self.special and not self.low <= number <= self.high:
            raise ConfigError.invalid_value(
                name, value, f"Value must be between {self.low} and {self.high} or equal to {self.special}"
            )

    def describe(self) -> str:
        return f"[{self.low},...,{self.high}] or {self.special}"


@dataclass(frozen=True, slots=True)
class OneOf:
    """A string from a fixed set (Kafka's ValidString); ``case_sensitive=False`` for enum-like names."""

    options: tuple[str, ...]
    case_sensitive: bool = True

    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, str) or not self._allowed(value):
            raise ConfigError.invalid_value(name, value, f"String must be one of: {', '.join(self.options)}")

    def _allowed(self, value: str) -> bool:
        if self.case_sensitive:
            return value in self.options
        return value.lower() in {option.lower() for option in self.options}

    def describe(self) -> str:
        return f"[{', '.join(self.options)}]"


def one_of(*options: str, case_sensitive: bool = True) -> OneOf:
    return OneOf(options, case_sensitive)


@dataclass(frozen=True, slots=True)
class ListOf:
    """A list whose every item is one of ``options`` (Kafka's ValidList); an empty list is allowed."""

    options: tuple[str, ...]

    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, list):
            raise ConfigError.invalid_value(name, value, "Value must be a list")
        for item in value:
            if item not in self.options:
                raise ConfigError.invalid_value(
                    name, item, f"String must be one of: {', '.join(self.options)}"
                )

    def describe(self) -> str:
        return f"[{', '.join(self.options)}]"


def list_of(*options: str) -> ListOf:
    return ListOf(options)


@dataclass(frozen=True, slots=True)
class NonEmptyString:
    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError.invalid_value(name, value, "String must be non-empty")

    def describe(self) -> str:
        return "non-empty string"


@dataclass(frozen=True, slots=True)
class NonNull:
    """Any value, as long as there is one (an empty string is fine)."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        if value is None:
            raise ConfigError.invalid_value(name, value, "entry must be non null")

    def describe(self) -> str:
        return "non-null string"


@dataclass(frozen=True, slots=True)
class Check:
    """A custom rule: ``accepts(value)`` decides, ``reason`` explains a rejection."""

    accepts: Callable[[ConfigValue], bool]
    description: str
    reason: str

    def __call__(self, name: str, value: ConfigValue) -> None:
        if value is None or not self.accepts(value):
            raise ConfigError.invalid_value(name, value, self.reason)

    def describe(self) -> str:
        return self.description


@dataclass(frozen=True, slots=True)
class ThrottledReplicaList:
    """Kafka's ThrottledReplicaListValidator: `*`, or `partition:broker` pairs (an empty entry is
    allowed, and entries joining into `*` count as the wildcard), with Kafka's message."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, list):
            raise ConfigError.invalid_value(name, value, f"{name} must be a List")
        entries = [item.strip() for item in value]
        if "".join(entries) == "*" or all(_PARTITION_BROKER.fullmatch(item) for item in entries):
            return
        raise ConfigError(
            f"Invalid value [{', '.join(value)}] for configuration {name}: {name} must be the literal '*' "
            f"or a list of replicas in the following format: {self.describe()}",
            name,
        )

    def describe(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


_PARTITION_BROKER = re.compile(r"([0-9]+:[0-9]+)?")

THROTTLED_REPLICAS = ThrottledReplicaList()


#: A socket buffer size: -1 leaves the operating system's default. Kafka declares no validator and then
#: fails every connection on 0 or below (Java refuses such a size); odradek refuses it at start-up.
SOCKET_BUFFER_BYTES = RangeOrValue(1, INT_MAX, -1)


def _is_kafka_version(value: ConfigValue) -> bool:
    return isinstance(value, str) and _KAFKA_VERSION.fullmatch(value) is not None


# Releases as Kafka's version configs spell them: 0.8.0 to 0.11.0 (three parts, a fourth ignored), 1.0
# to 3.x (two parts, a third ignored), each with an optional "-IVn".
_KAFKA_VERSION = re.compile(r"(0\.(8|9|10|11)\.[0-9]+(\.[0-9]+)?|[1-3]\.[0-9]+(\.[0-9]+)?)(-IV[0-9]+)?")

KAFKA_VERSION = Check(
    _is_kafka_version,
    "[0.8.0, ..., 3.9-IV0]",
    "Not a Kafka release version such as 2.8 or 3.0-IV1",
)


def _number(name: str, value: ConfigValue) -> int | float:
    if value is None:
        raise ConfigError.invalid_value(name, value, "Value must be non-null")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError.invalid_value(name, value, "Value must be a number")
    return value
