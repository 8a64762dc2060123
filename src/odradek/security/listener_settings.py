"""A listener's view of the security settings: ``listener.name.<listener>.<config>`` before ``<config>``.

SASL mechanism configs are scoped once more, as Kafka's: ``listener.name.<listener>.<mechanism>.
sasl.jaas.config`` (mechanism in lower case) before ``sasl.jaas.config``.
"""

from __future__ import annotations

from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX
from odradek.config.types import ConfigValue, Password


class ListenerSettings:
    def __init__(self, config: BrokerConfig, listener_name: str) -> None:
        self.config = config
        self.listener_name = listener_name
        self.prefix = f"{LISTENER_PREFIX}{listener_name.lower()}."
        self.overrides = {
            name[len(self.prefix) :]: raw
            for name, raw in config.listener_overrides().items()
            if name.lower().startswith(self.prefix)
        }

    def get(self, name: str, mechanism: str | None = None) -> ConfigValue:
        """The effective value of broker config `name` on this listener (for `mechanism`, if given)."""
        key = BROKER_CONFIGS[name]
        if mechanism is not None and f"{mechanism.lower()}.{name}" in self.overrides:
            return key.parse(self.overrides[f"{mechanism.lower()}.{name}"])
        if name in self.overrides:
            return key.parse(self.overrides[name])
        return self.config[name]

    def source(self, name: str, mechanism: str | None = None) -> str:
        """The setting's name as the operator wrote it, for error messages."""
        if mechanism is not None and f"{mechanism.lower()}.{name}" in self.overrides:
            return f"{self.prefix}{mechanism.lower()}.{name}"
        return f"{self.prefix}{name}" if name in self.overrides else name

    def text(self, name: str, mechanism: str | None = None) -> str | None:
        value = self.get(name, mechanism)
        if value is None:
            return None
        return value.value if isinstance(value, Password) else str(value)

    def strings(self, name: str) -> list[str]:
        value = self.get(name)
        return [str(item) for item in value] if isinstance(value, list) else []
