"""What each listener requires of its connections, from `listener.security.protocol.map`:
PLAINTEXT nothing, SSL a TLS handshake, SASL_PLAINTEXT a SASL exchange, SASL_SSL both.

Built once at start-up; any setting that cannot be honoured stops the start with one line naming it,
and so does a TLS or SASL setting scoped to a listener that would not use it. The unscoped ones with no
listener to read them are accepted with a warning, as Kafka accepts (and ignores) them: operators'
PLAINTEXT-only server.properties often carry them, and a broker replacing Kafka's must start on that file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from odradek.config.broker import BrokerConfig
from odradek.config.catalog import BROKER_CONFIGS, LISTENER_PREFIX, listener_base
from odradek.config.listeners import Endpoint
from odradek.config.types import ConfigError
from odradek.security.listener_settings import ListenerSettings
from odradek.security.sasl_config import ListenerSasl, listener_sasl
from odradek.security.tls import ListenerTls, listener_tls

log = logging.getLogger(__name__)

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
    warn_unread(config, endpoints)
    security: dict[str, ListenerSecurity] = {}
    for endpoint in endpoints:
        settings = ListenerSettings(config, endpoint.listener_name)
        protocol = endpoint.security_protocol
        tls = listener_tls(settings) if protocol in TLS_PROTOCOLS else None
        sasl = listener_sasl(settings) if protocol in SASL_PROTOCOLS else None
        security[endpoint.listener_name] = ListenerSecurity(endpoint.listener_name, protocol, tls, sasl)
    return security


def warn_unread(config: BrokerConfig, endpoints: list[Endpoint]) -> None:
    """One warning naming the TLS and SASL settings no listener reads (names only: values may be secret)."""
    protocols = {endpoint.security_protocol for endpoint in endpoints}
    unread = [
        f"{', '.join(names)} (no {kind} listener)"
        for names, kind in (
            (_set_but_unread(config, protocols, _TLS_ONLY, TLS_PROTOCOLS), "SSL or SASL_SSL"),
            (_set_but_unread(config, protocols, _SASL_ONLY, SASL_PROTOCOLS), "SASL"),
        )
        if names
    ]
    if unread:
        log.warning("set but not read, as Kafka ignores them too: %s", "; ".join(unread))


def _set_but_unread(
    config: BrokerConfig, protocols: set[str], names: tuple[str, ...], readers: tuple[str, ...]
) -> list[str]:
    return [] if protocols.intersection(readers) else [name for name in names if config.is_set(name)]


def refuse_unused(config: BrokerConfig, endpoints: list[Endpoint]) -> None:
    """A TLS or SASL setting scoped to a listener that does not use TLS or SASL stops the start."""
    protocols = {endpoint.listener_name: endpoint.security_protocol for endpoint in endpoints}
    for name in config.listener_overrides():
        listener = name[len(LISTENER_PREFIX) :].split(".", 1)[0].upper()
        base = listener_base(name)
        if base in _TLS_ONLY and protocols.get(listener) not in TLS_PROTOCOLS:
            raise ConfigError(f"{name} is set but listener {listener} does not use SSL or SASL_SSL", name)
        if base in _SASL_ONLY and protocols.get(listener) not in SASL_PROTOCOLS:
            raise ConfigError(f"{name} is set but listener {listener} does not use SASL", name)
