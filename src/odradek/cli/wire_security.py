"""TLS and SASL for the commands that speak the protocol themselves (wire.py), from the same client
settings librdkafka reads (`--command-config`, `-X`): client/security.py reads them (and is shared
with the two-phase-commit producer); here its failures become the command line's one-line errors.

Java's JKS/PKCS12 store settings arrive here already turned into PEM (cli/client.py). Other settings
of these families (GSSAPI, OAUTHBEARER) are refused with one line.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from odradek.cli.client import ClientConfig
from odradek.cli.errors import CliError
from odradek.client.security import (
    PROTOCOLS,
    ClientSecurityError,
    client_security,
    secure,
    unsupported_settings,
)
from odradek.client.security import authenticate as sasl_authenticate

Exchange = Callable[[Any], Any]


def security_protocol(config: ClientConfig, what: str) -> str:
    """The connection's protocol; a TLS or SASL setting that applies to it and that this client does not
    read is refused, not skipped (librdkafka's commands do honour it: ssl.crl.location, say)."""
    protocol = str(config.get("security.protocol", "plaintext")).lower()
    if protocol.upper() not in PROTOCOLS:
        raise CliError(f"{what}: security.protocol {protocol.upper()} is not one of PLAINTEXT, SSL, SASL_*")
    families = (("ssl.", "ssl_") if "ssl" in protocol else ()) + (("sasl.",) if "sasl" in protocol else ())
    unread = [name for name in unsupported_settings(config) if name.startswith(families)] if families else []
    if unread:
        them = "it" if len(unread) == 1 else "them"
        raise CliError(f"{what}: it does not read {', '.join(unread)}; remove {them} to go on without {them}")
    return protocol


def wrap_tls(sock: socket.socket, config: ClientConfig, host: str) -> socket.socket:
    """The connection over TLS, trusting `ssl.ca.location` (else the system's CAs)."""
    try:
        return secure(sock, client_security({**config, "security.protocol": "SSL"}), host)
    except ClientSecurityError as error:
        sock.close()
        raise CliError(str(error)) from None
    except OSError as error:
        raise CliError(f"TLS with {host} failed: {error}") from None


def authenticate(exchange: Exchange, config: ClientConfig) -> None:
    """Run the SASL exchange of `sasl.mechanism` as `sasl.username`; raises CliError when refused."""
    try:
        sasl_authenticate(exchange, client_security({**config, "security.protocol": "SASL_PLAINTEXT"}))
    except ClientSecurityError as error:
        raise CliError(str(error), kafka_code=error.kafka_code) from None
