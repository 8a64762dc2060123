"""The vocabulary of a config catalog: value types, importance, update modes, sources, and ConfigKey.

A ``ConfigKey`` is one documented config: Kafka's name, type, default, validator and importance, and
for broker configs whether it can be changed at run time. ``ConfigKey.parse`` turns the string form
(from ``server.properties``, ``--override`` or an AlterConfigs request) into a typed value and
validates it, raising ``ConfigError`` with Kafka's wording ("Invalid value x for configuration y: ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum, IntEnum
from typing import Protocol, TypeAlias


class ConfigType(IntEnum):
    """A config's value type; the numbers are DescribeConfigs' ConfigType field (v3+)."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @property
    def kafka_name(self) -> str:
        """The lower-case name Kafka's documentation uses, e.g. ``long``."""
        return self.name.lower()


class ConfigSource(IntEnum):
    """Where a config's value came from; the numbers are DescribeConfigs' ConfigSource field (v1+)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class Importance(Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class DynamicUpdateMode(Enum):
    """Whether a broker config can change without a restart, and at which scope (Kafka's wording)."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


class Password:
    """A secret config value. Its str and repr never show the secret; read ``.value`` to use it."""

    __slots__ = ("value",)

    HIDDEN = "[hidden]"

    def __init__(self, value: str) -> None:
        self.value = value

    def __str__(self) -> str:
        return self.HIDDEN

    def __repr__(self) -> str:
        return f"Password({self.HIDDEN})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


ConfigValue: TypeAlias = bool | int | float | str | list[str] | Password | None


class Validator(Protocol):
    """Checks a parsed value (raising ConfigError) and describes the valid values for the docs."""

    def __call__(self, name: str, value: ConfigValue) -> None: ...

    def describe(self) -> str: ...


class ConfigError(ValueError):
    """A config that cannot be used: a bad value, a malformed file line, or a conflict between configs.

    ``name`` is the config concerned, when there is one.
    """

    def __init__(self, message: str, name: str | None = None) -> None:
        super().__init__(message)
        self.name = name

    @classmethod
    def invalid_value(cls, name: str, value: object, reason: str | None = None) -> ConfigError:
        """Kafka's wording: ``Invalid value <value> for configuration <name>: <reason>``."""
        shown = Password.HIDDEN if isinstance(value, Password) else value
        message = f"Invalid value {shown} for configuration {name}"
        return cls(f"{message}: {reason}" if reason else message, name)


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One documented config. ``default`` is the parsed default; None means "no value" (Kafka's null)."""

    name: str
    type: ConfigType
    default: ConfigValue
    importance: Importance
    doc: str
    validator: Validator | None = None
    dynamic: DynamicUpdateMode = DynamicUpdateMode.READ_ONLY
    # odradek_specific: not a Kafka config.
    odradek_specific: bool = False
    # refused: why odradek cannot honour this config yet (e.g. "TLS is not built yet"); any value but
    # the default makes startup, CreateTopics or AlterConfigs fail naming the config.
    refused: str = ""
    # inert: why this config, accepted and validated, has nothing to act on in odradek (e.g. a
    # thread count on one event loop, a replication setting on a single node).
    inert: str = ""
    # cluster_only: why this config, real in a cluster (with zookeeper.connect), has nothing to act on
    # in a single node (e.g. a replica fetcher's setting where nothing replicates).
    cluster_only: str = ""
    # dynamic_only: Kafka knows this broker config only as a dynamic one (DynamicConfig.Broker, not
    # KafkaConfig): DescribeConfigs lists it only when set, with no DEFAULT_CONFIG synonym.
    dynamic_only: bool = False
    # authorizer_config: Kafka 3.9 knows this config only as its authorizer's (AclAuthorizer), not as
    # KafkaConfig's: DescribeConfigs lists it only when set, as any custom name (no value, sensitive,
    # of unknown type, no default), so the super users are not told to whoever may describe configs.
    authorizer_config: bool = False

    def __post_init__(self) -> None:
        if sum(bool(reason) for reason in (self.refused, self.inert, self.cluster_only)) > 1:
            raise ValueError(f"config {self.name} is only one of refused, inert and cluster-only")

    @property
    def sensitive(self) -> bool:
        """Passwords (and the authorizer's configs, as Kafka): DescribeConfigs reports them with a null
        value, and logs never show them."""
        return self.type is ConfigType.PASSWORD or self.authorizer_config

    @property
    def valid_values(self) -> str:
        """Kafka's "Valid Values" column, e.g. ``[1,...]`` or ``[compact, delete]``."""
        return self.validator.describe() if self.validator is not None else ""

    @property
    def read_only(self) -> bool:
        return self.dynamic is DynamicUpdateMode.READ_ONLY

    @property
    def documentation(self) -> str:
        """What DescribeConfigs serves: Kafka's meaning, then what odradek does with it if that differs."""
        if self.refused:
            return f"{self.doc} Refused unless left at its default: {self.refused}"
        if self.inert:
            return f"{self.doc} Accepted without effect: {self.inert}"
        if self.cluster_only:
            return f"{self.doc} Without zookeeper.connect it has no effect: {self.cluster_only}"
        return self.doc

    def check_supported(self, value: ConfigValue) -> None:
        """Raise ConfigError naming this config if it is refused and ``value`` is not its default."""
        if self.refused and value != self.default:
            raise ConfigError(f"odradek cannot honour {self.name}: {self.refused}", self.name)

    def parse(self, raw: str) -> ConfigValue:
        """The typed, validated value of a string setting."""
        value = parse_value(self.name, self.type, raw)
        self.validate(value)
        return value

    def validate(self, value: ConfigValue) -> None:
        if self.validator is not None:
            self.validator(self.name, value)

    def to_string(self, value: ConfigValue) -> str | None:
        return format_value(self.type, value)


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """One place a config's value could come from, as DescribeConfigs lists synonyms."""

    name: str
    value: ConfigValue
    source: ConfigSource
    key: ConfigKey = field(repr=False)

    @property
    def value_string(self) -> str | None:
        return self.key.to_string(self.value)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """A config as DescribeConfigs reports it: value, source, flags and synonyms."""

    name: str
    value: ConfigValue
    source: ConfigSource
    key: ConfigKey = field(repr=False)
    read_only: bool = True
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def value_string(self) -> str | None:
        """None for a sensitive config, whatever its value."""
        return self.key.to_string(self.value)

    @property
    def is_sensitive(self) -> bool:
        return self.key.sensitive

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


def parse_value(name: str, config_type: ConfigType, raw: str) -> ConfigValue:
    """Parse a setting as Kafka's ConfigDef does: surrounding whitespace is ignored for every type."""
    text = raw.strip()
    if config_type is ConfigType.BOOLEAN:
        if text.lower() == "true":
            return True
        if text.lower() == "false":
            return False
        raise ConfigError.invalid_value(name, raw, "Expected value to be either true or false")
    if config_type in (ConfigType.STRING, ConfigType.CLASS):
        return text
    if config_type is ConfigType.PASSWORD:
        return Password(text)
    if config_type is ConfigType.LIST:
        return [] if not text else [item.strip() for item in text.split(",")]
    if config_type is ConfigType.DOUBLE:
        if not _DOUBLE.fullmatch(text):
            raise ConfigError.invalid_value(name, raw, "Not a number of type DOUBLE")
        return float(text)
    low, high = _INTEGER_RANGES[config_type]
    if not _INTEGER.fullmatch(text):
        raise ConfigError.invalid_value(name, raw, f"Not a number of type {config_type.name}")
    # Leading zeros are Java's to skip too; past 19 digits no LONG fits (and Python's int() refuses
    # more than 4300 digits with an exception of its own).
    digits = text.lstrip("+-").lstrip("0") or "0"
    number = int(digits) if len(digits) <= _LONG_DIGITS else None
    if number is not None and text.startswith("-"):
        number = -number
    if number is None or not low <= number <= high:
        raise ConfigError.invalid_value(name, raw, f"Not a number of type {config_type.name}")
    return number


def format_value(config_type: ConfigType, value: ConfigValue) -> str | None:
    """The string form DescribeConfigs reports; None for no value and for every password."""
    if value is None or config_type is ConfigType.PASSWORD:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, float):
        return java_double_string(value)
    return str(value)


def java_double_string(value: float) -> str:
    """Format a double like Java's Double.toString, so described values match a Kafka broker's."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    # Java switches to "d.dddE±n" outside [1e-3, 1e7); repr gives the same shortest digits.
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    shown = "".join(str(digit) for digit in digits)
    mantissa = shown[0] + "." + (shown[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{exponent + len(digits) - 1}"


_INTEGER = re.compile(r"[+-]?\d+")
#: Unambiguous (the fraction starts at its dot), so a long value that is not a number is refused in
#: linear time: `\d+\.?\d*` split a run of digits every way before failing, a quadratic backtrack.
_DOUBLE = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_LONG_DIGITS = 19
_INTEGER_RANGES = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308
