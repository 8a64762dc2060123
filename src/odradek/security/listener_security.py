"""What each listener requires of its connections, from `listener.security.protocol.map`:
PLAINTEXT nothing, SSL a TLS handshake, SASL_PLAINTEXT a SASL exchange, SASL_SSL both.

Built once at start-up; any setting that cannot be honoured stops the start with one line naming it,
and so does a TLS or SASL setting given while no listener would use it (settings are real or refused).
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.listeners import Endpoint
from odradek.config.types import ConfigError
from odradek.security.listener_settings import ListenerSettings
from odradek.security.sasl_config import ListenerSasl, listener_sasl
from odradek.security.tls import ListenerTls, listener_tls

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
#: Settings that only a TLS (or SASL) listener reads.
_TLS_ONLY = tuple(name for name in BROKER_CONFIGS if name.startswith("ssl."))
_SASL_ONLY = (
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.server.max.receive.size",
    "connections.max.reauth.ms",
)


@dataclass(frozen=True)
class ListenerSecurity:
    listener_name: str
    security_protocol: str
    tls: ListenerTls | None
    sasl: ListenerSasl | None


def listener_security(config: BrokerConfig) -> dict[str, ListenerSecurity]:
    """Each listener's security, by listener name; raises ConfigError."""
    endpoints = config.listener_endpoints()
    refuse_unused(config, endpoints)
    security: dict[str, ListenerSecurity] = {}
    for endpoint in endpoints:
        settings = ListenerSettings(config, endpoint.listener_name)
        protocol = endpoint.security_protocol
        tls = listener_tls(settings) if protocol in TLS_PROTOCOLS else None
        sasl = listener_sasl(settings) if protocol in SASL_PROTOCOLS else None
        security[endpoint.listener_name] = ListenerSecurity(endpoint.listener_name, protocol, tls, sasl)
    return security


def refuse_unused(config: BrokerConfig, endpoints: list[Endpoint]) -> None:
    protocols = {endpoint.listener_name: endpoint.security_protocol for endpoint in endpoints}
    for names, wanted, kind in (
        (_TLS_ONLY, TLS_PROTOCOLS, "SSL or SASL_SSL"),
        (_SASL_ONLY, SASL_PROTOCOLS, "SASL"),
    ):
        if any(protocol in wanted for protocol in protocols.values()):
            continue
        for name in names:
            if config.is_set(name):
                raise ConfigError(
                    f"{name} is set but no listener uses {kind}, so nothing would read it", name
                )
    for name in config.listener_overrides():
        listener = name[len(LISTENER_PREFIX) :].split(".", 1)[0].upper()
        base = listener_base(name)
        if base in _TLS_ONLY and protocols.get(listener) not in TLS_PROTOCOLS:
            raise ConfigError(f"{name} is set but listener {listener} does not use SSL or SASL_SSL", name)
        if base in _SASL_ONLY and protocols.get(listener) not in SASL_PROTOCOLS:
            raise ConfigError(f"{name} is set but listener {listener} does not use SASL", name)
