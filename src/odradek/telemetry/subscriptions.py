"""CLIENT_METRICS config resources: a named subscription of metric-name prefixes, a push interval and
the clients it is for (Kafka's ClientMetricsConfigs).

```
metrics      list of metric-name prefixes the matching clients push ("*": every metric); default none
interval.ms  how often they push, 100 ms to 1 hour; default 5 minutes
match        list of <attribute>=<regex>; a client matches when every named attribute matches whole
```
The attributes are client_instance_id, client_id, client_software_name, client_software_version,
client_source_address and client_source_port. Kafka compiles the regexes with java.util.regex;
odradek with RE2 (linear time whatever the pattern), which refuses what RE2 cannot run (look-arounds,
back-references): such a pattern is INVALID_CONFIG here though Java would take it.
Refusals use Kafka's error codes and words: an unknown config, an empty name or an interval out of range
is INVALID_REQUEST, a value that does not parse or an illegal pattern INVALID_CONFIG.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import re2

from odradek.config.types import ConfigKey, ConfigType, Importance
from odradek.protocol.error_codes import ErrorCode, KafkaError

METRICS: Final = "metrics"
INTERVAL_MS: Final = "interval.ms"
MATCH: Final = "match"
#: Every config a CLIENT_METRICS resource may hold, in Kafka's order, with its default as a string.
CONFIG_DEFAULTS: Final = {METRICS: "", INTERVAL_MS: "300000", MATCH: ""}
#: The configs as DescribeConfigs reports their types and documentation (Kafka's words).
CLIENT_METRICS_CONFIGS: Final = {
    METRICS: ConfigKey(METRICS, ConfigType.LIST, [], Importance.MEDIUM, "Telemetry metric name prefix list"),
    INTERVAL_MS: ConfigKey(
        INTERVAL_MS, ConfigType.INT, 300_000, Importance.MEDIUM, "Metrics push interval in milliseconds"
    ),
    MATCH: ConfigKey(MATCH, ConfigType.LIST, [], Importance.MEDIUM, "Client match criteria"),
}
ALL_METRICS: Final = "*"
#: The longest regex compiled (as for the regexes clients send, docs/operations.md): RE2 parses the
#: costliest patterns of this length in about a second, on the event loop here.
MAX_PATTERN_CHARS: Final = 16_384
DEFAULT_INTERVAL_MS: Final = 300_000
MIN_INTERVAL_MS: Final = 100
MAX_INTERVAL_MS: Final = 3_600_000

MATCH_ATTRIBUTES: Final = frozenset(
    {
        "client_instance_id",
        "client_id",
        "client_software_name",
        "client_software_version",
        "client_source_address",
        "client_source_port",
    }
)


class ClientAttributes(NamedTuple):
    """What a subscription's `match` patterns are matched against; None: not known (never matches)."""

    client_instance_id: str | None
    client_id: str | None
    client_software_name: str | None
    client_software_version: str | None
    client_source_address: str | None
    client_source_port: int | None

    def value(self, attribute: str) -> str | None:
        found = getattr(self, attribute)
        return None if found is None else str(found)


@dataclass(frozen=True, slots=True)
class Subscription:
    name: str
    metrics: frozenset[str]
    interval_ms: int
    #: attribute -> compiled RE2 pattern (the library is untyped)
    match: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, client: ClientAttributes) -> bool:
        """Every pattern matches its attribute whole (no patterns: every client matches)."""
        for attribute, pattern in self.match.items():
            value = client.value(attribute)
            if value is None or pattern.fullmatch(value) is None:
                return False
        return True


def subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """The subscription `configs` describe, or KafkaError saying what Kafka would refuse."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in CONFIG_DEFAULTS:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    metrics = _list(METRICS, configs.get(METRICS, ""))
    interval = _int(INTERVAL_MS, configs.get(INTERVAL_MS, CONFIG_DEFAULTS[INTERVAL_MS]))
    if INTERVAL_MS in configs and not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid value {interval} for {INTERVAL_MS}, interval must be between 100 and 3600000 (1 hour)",
        )
    patterns = _list(MATCH, configs.get(MATCH, ""))
    return Subscription(name, frozenset(metrics), interval, _match_patterns(patterns))


def _list(key: str, value: str) -> list[str]:
    """A LIST config as Kafka's ConfigDef parses it: comma-separated, trimmed; no value twice."""
    items = [item.strip() for item in value.split(",")] if value.strip() else []
    if len(set(items)) != len(items):
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid value {value} for configuration {key}: "
            f"Configuration '{key}' values must not be duplicated.",
        )
    return items


def _int(key: str, value: str) -> int:
    text = value.strip()
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or not -(2**31) <= number < 2**31 or not text.lstrip("+-").isdigit():
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid value {value} for configuration {key}: Not a number of type INT",
        )
    return number


def _match_patterns(patterns: list[str]) -> dict[str, Any]:
    compiled: dict[str, Any] = {}
    for pattern in patterns:
        # Java's String.split("="): trailing empty parts are dropped, so "client_id=" has one part
        parts = pattern.split("=")
        while parts and parts[-1] == "":
            parts.pop()
        attribute = parts[0].strip() if parts else ""
        if len(parts) != 2 or attribute not in MATCH_ATTRIBUTES or len(parts[1]) > MAX_PATTERN_CHARS:
            shown = pattern if len(pattern) <= 100 else pattern[:100] + "..."
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {shown}")
        try:
            compiled[attribute] = re2.compile(parts[1].strip(), _OPTIONS)
        except re2.error:
            raise KafkaError(
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
            ) from None
    return compiled


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # an operator's bad pattern is their error, not a line in the broker's log
    options.never_capture = True
    return options


_OPTIONS: Final = _options()
