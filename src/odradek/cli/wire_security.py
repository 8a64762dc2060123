"""TLS and SASL for the commands that speak the protocol themselves (wire.py), from the same client
settings librdkafka reads (`--command-config`, `-X`): `security.protocol` (PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL), `ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`,
`ssl.key.password`, `ssl.ca.pem`, `ssl.key.pem` with `ssl.certificate.pem`, `ssl.keystore.location`
with `ssl.keystore.password` (PKCS12, as librdkafka), `enable.ssl.certificate.verification`,
`ssl.endpoint.identification.algorithm`,
`sasl.mechanism` (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), `sasl.username`, `sasl.password`.

The SASL exchange is Kafka's, shared with the brokers' own client (security/sasl_client.py).
Java's JKS/PKCS12 store settings arrive here already turned into PEM (cli/client.py). Other settings
of these families (GSSAPI, OAUTHBEARER) are refused with one line.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any, Final

from odradek.cli.client import ClientConfig
from odradek.cli.errors import CliError
from odradek.security.key_stores import StoreError, read_key_store
from odradek.security.sasl_client import MECHANISMS, SaslLoginError, sasl_exchange
from odradek.security.tls import load_inline_key

PROTOCOLS: Final = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")

Exchange = Callable[[Any], Any]


def security_protocol(config: ClientConfig, what: str) -> str:
    protocol = str(config.get("security.protocol", "plaintext")).lower()
    if protocol not in PROTOCOLS:
        raise CliError(f"{what}: security.protocol {protocol.upper()} is not one of PLAINTEXT, SSL, SASL_*")
    return protocol


def wrap_tls(sock: socket.socket, config: ClientConfig, host: str) -> socket.socket:
    """The connection over TLS, trusting `ssl.ca.location` (else the system's CAs)."""
    ca, ca_pem = config.get("ssl.ca.location"), config.get("ssl.ca.pem")
    context = ssl.create_default_context(
        cafile=str(ca) if ca else None, cadata=str(ca_pem) if ca_pem else None
    )
    certificate = config.get("ssl.certificate.location")
    if certificate:
        key = config.get("ssl.key.location")
        password = config.get("ssl.key.password")
        context.load_cert_chain(
            str(certificate), str(key) if key else None, str(password) if password else None
        )
    elif config.get("ssl.key.pem") and config.get("ssl.certificate.pem"):
        load_inline_key(context, str(config["ssl.key.pem"]), str(config["ssl.certificate.pem"]), None)
    elif config.get("ssl.keystore.location"):
        _load_pkcs12(context, config)
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif str(config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    try:
        return context.wrap_socket(sock, server_hostname=host)
    except (ssl.SSLError, OSError) as error:
        sock.close()
        raise CliError(f"TLS with {host} failed: {error}") from None


def _load_pkcs12(context: ssl.SSLContext, config: ClientConfig) -> None:
    """librdkafka's `ssl.keystore.location` / `ssl.keystore.password`: a PKCS12 file."""
    location, password = str(config["ssl.keystore.location"]), config.get("ssl.keystore.password")
    try:
        material = read_key_store(location, "PKCS12", str(password or ""), None)
    except StoreError as error:
        raise CliError(
            f"ssl.keystore.location {location}: the PKCS12 key store cannot be read: {error}"
        ) from None
    load_inline_key(context, material.key_pem, material.chain_pem, None)


def authenticate(exchange: Exchange, config: ClientConfig) -> None:
    """Run the SASL exchange of `sasl.mechanism` as `sasl.username`; raises CliError when refused."""
    mechanism = str(config.get("sasl.mechanism", "GSSAPI")).upper()
    if mechanism not in MECHANISMS:
        raise CliError(
            f"sasl.mechanism {mechanism} is not supported here (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
        )
    user, password = config.get("sasl.username"), config.get("sasl.password")
    if user is None or password is None:
        raise CliError("SASL needs sasl.username and sasl.password in the client settings")
    steps = sasl_exchange(mechanism, str(user), str(password))
    try:
        request = next(steps)
        while True:
            request = steps.send(exchange(request))
    except StopIteration:
        return
    except SaslLoginError as error:
        raise CliError(str(error), kafka_code=error.code) from None
