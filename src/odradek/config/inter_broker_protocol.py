"""``inter.broker.protocol.version``: Kafka's inter-broker protocol versions (MetadataVersion's IBP_*),
read as Kafka reads them, and the range odradek honours.

A value names a release with an optional internal version: ``3.9-IV0``, or just ``3.9`` (that
release's last one); ``0.x.y`` releases have three parts, later ones two, and whatever follows them is
ignored (``2.8.1`` is ``2.8-IV1``), as Kafka's ``MetadataVersion.fromVersionString``.

odradek honours 3.0-IV1 to 3.9-IV0: its brokers then speak to each other at the request versions
Kafka's brokers use at that version (odradek.cluster.inter_broker_versions). Older ones change more
than request versions: below 3.0-IV1 Kafka still writes log.message.format.version's older formats
(odradek stores format v2 only), below 2.8 topics have no ids and below 2.7-IV2 leaders write ISR
changes to ZooKeeper themselves; those start-ups fail naming the config. 4.0's versions exist only
for KRaft clusters.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.config.types import ConfigError, ConfigValue

#: Every version Kafka 3.9 knows, oldest first (its MetadataVersion enum, ZooKeeper-era and KRaft).
IBP_VERSIONS: tuple[str, ...] = (
    *("0.8.0", "0.8.1", "0.8.2", "0.9.0"),
    *("0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0"),
    *("0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0", "2.0-IV0", "2.0-IV1"),
    *("2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1"),
    *("2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1", "3.0-IV0", "3.0-IV1"),
    *("3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0"),
    *("3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2"),
    *("3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0", "4.0-IV0", "4.0-IV1"),
)
#: The last production version, Kafka 3.9's default; later ones are unstable KRaft-only versions.
LATEST = "3.9-IV0"
MINIMUM_HONOURED = "3.0-IV1"
_ORDER = {version: index for index, version in enumerate(IBP_VERSIONS)}
#: A release alone stands for its last production version ("3.0" is 3.0-IV1; "4.0" is none).
_RELEASES = {version.split("-")[0]: version for version in IBP_VERSIONS if _ORDER[version] <= _ORDER[LATEST]}


@dataclass(frozen=True, slots=True)
class InterBrokerProtocolVersion:
    """One IBP, comparable by age: ``ibp.is_at_least("3.4-IV0")``."""

    version: str

    @classmethod
    def parse(cls, text: str) -> InterBrokerProtocolVersion:
        """Kafka's reading of a version string; ValueError for one that names no version."""
        segments = text.split(".")
        count = 3 if text.startswith("0.") else 2
        key = text if count >= len(segments) else ".".join(segments[:count])
        version = _RELEASES.get(key) or (key if key in _ORDER else None)
        if version is None:
            raise ValueError(f"Version {text} is not a valid version")
        return cls(version)

    def is_at_least(self, other: str) -> bool:
        return _ORDER[self.version] >= _ORDER[other]

    @property
    def honoured(self) -> bool:
        return self.is_at_least(MINIMUM_HONOURED) and not self.is_at_least("4.0-IV0")

    def __str__(self) -> str:
        return self.version


@dataclass(frozen=True, slots=True)
class InterBrokerProtocolCheck:
    """The catalog's validator: a version Kafka knows (else Kafka's wording), and one odradek honours
    (else a refusal naming the config and why)."""

    def __call__(self, name: str, value: ConfigValue) -> None:
        if not isinstance(value, str):
            raise ConfigError.invalid_value(name, value, "Value must be a version string")
        try:
            version = InterBrokerProtocolVersion.parse(value)
        except ValueError as error:
            raise ConfigError.invalid_value(name, value, str(error)) from None
        if version.honoured:
            return
        if version.is_at_least("4.0-IV0"):
            why = f"{version} is an unstable KRaft-only version; ZooKeeper clusters end at {LATEST}"
        else:
            why = (
                f"{version} is older than {MINIMUM_HONOURED}, which odradek's brokers need: below it Kafka "
                "still writes the older message formats of log.message.format.version (odradek stores "
                "format v2 only), and older brokers speak requests without topic ids"
            )
        raise ConfigError(f"odradek cannot honour {name}={value}: {why}", name)

    def describe(self) -> str:
        return f"[{MINIMUM_HONOURED}, ..., {LATEST}]"


INTER_BROKER_PROTOCOL = InterBrokerProtocolCheck()
