"""New key and trust stores for TLS listeners without a restart: AlterConfigs of
``listener.name.<listener>.ssl.keystore.*`` / ``ssl.truststore.*`` on the broker, as Kafka's SslFactory.

A listener's context is rebuilt when its store settings change, or when a store file it was loaded from
has been modified since (so setting the same path again picks up a file replaced in place, as Kafka
compares file timestamps). A store that cannot be loaded refuses the change (INVALID_CONFIG) before
anything is written; accepted, the listener's new connections use the new context, while established
ones keep theirs. The inter-broker listener's stores are also this broker's client side towards the
other brokers (cluster/inter_broker_connection.py): its client context is rebuilt with them, and the
connections opened from then on present the new certificate and trust the new trust store.
"""

from __future__ import annotations

import logging
import os
import ssl
from typing import Protocol

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.security.listener_security import TLS_PROTOCOLS, refuse_unused
from odradek.security.listener_settings import ListenerSettings
from odradek.security.tls import client_tls, listener_tls

log = logging.getLogger("odradek.security")

#: What Kafka's SslFactory reconfigures (SslConfigs.RECONFIGURABLE_CONFIGS).
RELOADABLE = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    # per-broker dynamic in Kafka too; a new list applies to the listener's new connections
    "ssl.cipher.suites",
)
Signature = tuple[object, ...]


class TlsAcceptor(Protocol):
    """An acceptor of a listener, handing its TLS context to the connections it accepts."""

    listener: str
    ssl_context: ssl.SSLContext | None


class InterBrokerTls(Protocol):
    """The client side of the inter-broker listener (InterBrokerSecurity): its context is replaced."""

    listener_name: str
    tls: ssl.SSLContext | None


class TlsReloader:
    """Made with the broker's services, before its listeners are bound: each TLS acceptor registers
    as it is bound (`add_acceptor`)."""

    def __init__(self, config: BrokerConfig, inter_broker: InterBrokerTls | None = None) -> None:
        #: The configuration the acceptors' contexts were last built from.
        self.config = config
        self.acceptors: list[TlsAcceptor] = []
        self.signatures: dict[str, Signature] = {}
        self.inter_broker = (
            inter_broker if inter_broker is not None and inter_broker.tls is not None else None
        )

    def add_acceptor(self, acceptor: TlsAcceptor) -> None:
        """A listener's acceptor, bound: its context is replaced when the listener's stores change (one
        of a listener that is not TLS is not kept)."""
        if acceptor.ssl_context is None:
            return
        self.acceptors.append(acceptor)
        if acceptor.listener not in self.signatures:
            self.signatures[acceptor.listener] = _signature(self.config, acceptor.listener)

    def check(self, config: BrokerConfig) -> dict[str, tuple[ssl.SSLContext, Signature]]:
        """The new contexts of the TLS listeners whose stores changed under `config`; raises
        KafkaError(INVALID_CONFIG) if one cannot be built, or stores are set for a non-TLS listener."""
        try:
            endpoints = config.listener_endpoints()
            refuse_unused(config, endpoints)
            rebuilt = {}
            for endpoint in endpoints:
                name = endpoint.listener_name
                signature = _signature(config, name)
                if endpoint.security_protocol in TLS_PROTOCOLS and signature != self.signatures.get(name):
                    rebuilt[name] = (listener_tls(ListenerSettings(config, name)).context, signature)
                    if self.inter_broker is not None and name == self.inter_broker.listener_name:
                        client_tls(ListenerSettings(config, name))  # its client side must load too
        except ConfigError as error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(error)) from None
        return rebuilt

    def apply(self, config: BrokerConfig) -> None:
        rebuilt = self.check(config)
        for acceptor in self.acceptors:
            if acceptor.listener in rebuilt:
                acceptor.ssl_context = rebuilt[acceptor.listener][0]
        inter_broker = self.inter_broker
        if inter_broker is not None and inter_broker.listener_name in rebuilt:
            inter_broker.tls = client_tls(ListenerSettings(config, inter_broker.listener_name))
        for name, (_, signature) in rebuilt.items():
            self.signatures[name] = signature
        self.config = config
        if rebuilt:
            log.info("TLS key and trust stores reloaded for %s", ", ".join(sorted(rebuilt)))


def _signature(config: BrokerConfig, listener: str) -> Signature:
    """The listener's store settings and the modification times of the files they name."""
    settings = ListenerSettings(config, listener)
    values = [settings.text(name) for name in RELOADABLE]
    times = []
    for name in ("ssl.keystore.location", "ssl.truststore.location"):
        path = settings.text(name)
        try:
            times.append(os.stat(path).st_mtime_ns if path else None)
        except OSError:
            times.append(-1)  # gone: building the context says why
    return (*values, *times)
