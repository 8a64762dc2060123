"""New key and trust stores for TLS listeners without a restart: AlterConfigs of
``listener.name.<listener>.ssl.keystore.*`` / ``ssl.truststore.*`` on the broker, as Kafka's SslFactory.

Every AlterConfigs of this broker rebuilds the contexts of its TLS listeners from the new configuration
(so setting the same path again picks up a replaced file, as in Kafka). A store that cannot be loaded
refuses the change (INVALID_CONFIG) before anything is written; accepted, the listener's new
connections use the new context, while established ones keep theirs.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterable
from typing import Protocol

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.security.listener_security import listener_security

log = logging.getLogger("odradek.security")


class TlsAcceptor(Protocol):
    """An acceptor of a listener, handing its TLS context to the connections it accepts."""

    listener: str
    ssl_context: ssl.SSLContext | None


class TlsReloader:
    def __init__(self, acceptors: Iterable[TlsAcceptor]) -> None:
        self.acceptors = [acceptor for acceptor in acceptors if acceptor.ssl_context is not None]

    def check(self, config: BrokerConfig) -> dict[str, ssl.SSLContext]:
        """The TLS listeners' contexts under `config`; KafkaError(INVALID_CONFIG) if one cannot be built."""
        try:
            security = listener_security(config)
        except ConfigError as error:
            raise KafkaError(ErrorCode.INVALID_CONFIG, str(error)) from None
        return {name: item.tls.context for name, item in security.items() if item.tls is not None}

    def apply(self, config: BrokerConfig) -> None:
        contexts = self.check(config)
        for acceptor in self.acceptors:
            context = contexts.get(acceptor.listener)
            if context is not None:
                acceptor.ssl_context = context
        if self.acceptors:
            log.info("TLS key and trust stores reloaded for %s", ", ".join(sorted(contexts)))
