"""How a broker connects to another broker: one call for every broker-to-broker client.

Kafka's brokers reach each other on the endpoint each registered for the inter-broker listener
(`inter.broker.listener.name`, else the listener named after `security.inter.broker.protocol`), with
that listener's security protocol and settings (`listener.name.<l>.<config>` before `<config>`):

- SSL / SASL_SSL: TLS with the listener's trust store, its key store as client certificate (a peer
  with ssl.client.auth then sees this broker's certificate), ssl.endpoint.identification.algorithm;
- SASL_PLAINTEXT / SASL_SSL: `sasl.mechanism.inter.broker.protocol` (PLAIN, SCRAM-SHA-256/512) with
  the username and password options of `listener.name.<l>.<mechanism>.sasl.jaas.config` (else
  `sasl.jaas.config`), SaslHandshake then SaslAuthenticate (security/sasl_client.py); SCRAM's PBKDF2
  runs in a worker thread, one login at a time, not on the event loop serving clients.

`inter_broker_security(config)` reads and checks all of it once at start-up (a ConfigError names the
setting); `open_inter_broker_connection(host, port, security, client_id)` is the one call senders use.
A refused login raises InterBrokerAuthenticationError, a ConnectionError, so the senders' reconnect
paths treat it as a connection that failed (and log why).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from odradek.config.broker import BrokerConfig
from odradek.config.types import ConfigError
from odradek.protocol.codec_error import CodecError
from odradek.protocol.frames import decode_response, encode_request
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from odradek.security.jaas import JaasConfigError, parse_jaas_config
from odradek.security.listener_settings import ListenerSettings
from odradek.security.sasl_client import (
    MECHANISMS,
    KeyDerivation,
    SaslLoginError,
    SaslRequest,
    sasl_exchange,
)
from odradek.security.tls import client_tls

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
#: SaslHandshake v1 (tokens in SaslAuthenticate) and SaslAuthenticate v1 (session lifetime answered).
_HANDSHAKE_VERSION = 1
_AUTHENTICATE_VERSION = 1
_SIZE = struct.Struct(">i")
#: SCRAM's PBKDF2 off the event loop, one login's at a time (the others wait their turn).
_KEY_DERIVATIONS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scram-key-derivation")


@dataclass(frozen=True)
class SaslLogin:
    mechanism: str
    username: str
    password: str = field(repr=False)


@dataclass
class InterBrokerSecurity:
    """What a connection to another broker needs: its listener's protocol, TLS context, SASL login.

    One object per broker, shared by every sender: `tls` is replaced when the listener's key or trust
    store is changed with AlterConfigs (security/tls_reload.py), and each new connection reads it."""

    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    tls: ssl.SSLContext | None = None
    sasl: SaslLogin | None = None


#: The default of the senders' parameters: nothing to replace, never changed.
PLAINTEXT = InterBrokerSecurity()


class InterBrokerAuthenticationError(ConnectionError):
    """The peer refused this broker's login (or its TLS handshake failed): the message says why."""


def inter_broker_security(config: BrokerConfig) -> InterBrokerSecurity:
    """The inter-broker listener's client side, from the broker's settings; raises ConfigError."""
    name = (config.inter_broker_listener_name or config.security_inter_broker_protocol).upper()
    endpoints = {endpoint.listener_name: endpoint for endpoint in config.advertised_endpoints()}
    endpoint = endpoints.get(name)
    if endpoint is None:
        if name == "PLAINTEXT" and not config.zookeeper_connect:
            return PLAINTEXT  # no PLAINTEXT listener on a single node: nothing to connect to
        raise ConfigError(
            f"the inter-broker listener {name} is not in advertised.listeners "
            "(set inter.broker.listener.name to one of them)",
            "inter.broker.listener.name"
            if config.inter_broker_listener_name
            else "security.inter.broker.protocol",
        )
    protocol = endpoint.security_protocol
    settings = ListenerSettings(config, name)
    tls = client_tls(settings) if protocol in TLS_PROTOCOLS else None
    sasl = _sasl_login(config, settings) if protocol in SASL_PROTOCOLS else None
    return InterBrokerSecurity(name, protocol, tls, sasl)


def _sasl_login(config: BrokerConfig, settings: ListenerSettings) -> SaslLogin:
    mechanism = str(config.sasl_mechanism_inter_broker_protocol).upper()
    key = "sasl.mechanism.inter.broker.protocol"
    if mechanism not in MECHANISMS:
        raise ConfigError(
            f"{key}={mechanism}: brokers authenticate to each other with {', '.join(MECHANISMS)} only "
            "(GSSAPI and OAUTHBEARER are not built)",
            key,
        )
    enabled = [str(m).strip().upper() for m in settings.strings("sasl.enabled.mechanisms")]
    if mechanism not in enabled:
        raise ConfigError(
            f"{key} ({mechanism}) must be included in {settings.source('sasl.enabled.mechanisms')} "
            f"when SASL is used for inter-broker communication (listener {settings.listener_name})",
            key,
        )
    source = settings.source("sasl.jaas.config", mechanism)
    text = settings.text("sasl.jaas.config", mechanism)
    if not text:
        raise ConfigError(
            f"the inter-broker listener {settings.listener_name} uses SASL {mechanism}: set "
            f"{settings.prefix}{mechanism.lower()}.sasl.jaas.config to {LOGIN_MODULES[mechanism]} required "
            'username="<broker user>" password="<password>";',
            "sasl.jaas.config",
        )
    try:
        module = parse_jaas_config(text)
    except JaasConfigError as error:
        raise ConfigError(f"{source}: {error}", "sasl.jaas.config") from None
    if module.name != LOGIN_MODULES[mechanism]:
        raise ConfigError(f"{source}: {mechanism} needs the login module {LOGIN_MODULES[mechanism]}", source)
    username, password = module.options.get("username"), module.options.get("password")
    if username is None or password is None:
        raise ConfigError(f"{source}: the inter-broker login needs the options username and password", source)
    return SaslLogin(mechanism, username, password)


async def open_inter_broker_connection(
    host: str,
    port: int,
    security: InterBrokerSecurity,
    client_id: str,
    sock: socket.socket | None = None,
    receive_buffer_bytes: int = -1,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the broker at `host`:`port` (its endpoint for the inter-broker listener),
    through TLS and authenticated as `security` says, ready for requests.

    Raises InterBrokerAuthenticationError when the peer refuses the TLS handshake or the login, and
    OSError, asyncio.IncompleteReadError or CodecError when the connection fails; the caller bounds
    the time (asyncio.wait_for) as it bounds its requests. `sock`: a socket the caller already connected
    to `host`:`port` (a replica fetcher sets its buffers and source address first); otherwise
    `receive_buffer_bytes`, unless -1, is the new socket's SO_RCVBUF, set before it connects."""
    server_hostname = host if security.tls is not None else None
    if sock is None and receive_buffer_bytes != -1:
        sock = await _connected_socket(host, port, receive_buffer_bytes)
    try:
        if sock is not None:
            reader, writer = await asyncio.open_connection(
                sock=sock, ssl=security.tls, server_hostname=server_hostname
            )
        else:
            reader, writer = await asyncio.open_connection(
                host, port, ssl=security.tls, server_hostname=server_hostname
            )
    except ssl.SSLError as error:
        reason = getattr(error, "reason", None) or str(error)
        raise InterBrokerAuthenticationError(
            f"TLS handshake with broker at {host}:{port} failed: {reason}"
        ) from None
    try:
        if security.tls is not None:
            # TLS 1.3 servers refuse a client certificate after the handshake: the first answer
            # tells whether the peer accepted this broker's (Kafka's clients start with ApiVersions too)
            await round_trip(reader, writer, ApiVersionsRequest(), 0, 1, client_id)
    except (OSError, asyncio.IncompleteReadError) as error:
        writer.close()
        raise InterBrokerAuthenticationError(
            f"broker at {host}:{port} closed the TLS connection before answering ({error or 'EOF'}): "
            "does it trust this broker's certificate (ssl.client.auth)?"
        ) from None
    if security.sasl is None:
        return reader, writer
    try:
        await _authenticate(reader, writer, security.sasl, client_id)
    except SaslLoginError as error:
        writer.close()
        raise InterBrokerAuthenticationError(
            f"SASL {security.sasl.mechanism} login as {security.sasl.username} to broker at "
            f"{host}:{port} refused: {error}"
        ) from None
    except BaseException:
        writer.close()
        raise
    return reader, writer


async def _connected_socket(host: str, port: int, receive_buffer_bytes: int) -> socket.socket:
    """A socket connected to `host`:`port` with this SO_RCVBUF: set before the handshake, since the
    TCP window scale is agreed then. Each address the host resolves to is tried in turn (as asyncio's
    own connect): a host resolving to an address the broker does not listen on is reached at the next.
    """
    loop = asyncio.get_running_loop()
    addresses = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    errors: list[OSError] = []
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
            await loop.sock_connect(sock, address)
        except OSError as error:
            sock.close()
            errors.append(error)
            continue
        except BaseException:
            sock.close()
            raise
        return sock
    if len(errors) == 1:
        raise errors[0]
    raise OSError(f"cannot connect to {host}:{port}: {'; '.join(str(error) for error in errors)}")


async def _authenticate(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, login: SaslLogin, client_id: str
) -> None:
    steps = sasl_exchange(login.mechanism, login.username, login.password)
    correlation_id = 1  # after ApiVersions
    loop = asyncio.get_running_loop()
    try:
        step: SaslRequest | KeyDerivation = next(steps)
        while True:
            if isinstance(step, KeyDerivation):
                answer = await loop.run_in_executor(_KEY_DERIVATIONS, step.derive)
            else:
                correlation_id += 1
                version = (
                    _AUTHENTICATE_VERSION if isinstance(step, SaslAuthenticateRequest) else _HANDSHAKE_VERSION
                )
                answer = await round_trip(reader, writer, step, version, correlation_id, client_id)
            step = steps.send(answer)
    except StopIteration:
        return


async def round_trip(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    request: Any,
    version: int,
    correlation_id: int,
    client_id: str,
) -> Any:
    """One request sent on an inter-broker connection and its response read and decoded; CodecError
    when the answer is for another request (the connection is then no use)."""
    writer.write(encode_request(request, version, correlation_id, client_id))
    await writer.drain()
    (size,) = _SIZE.unpack(await reader.readexactly(4))
    answered_id, body = decode_response(await reader.readexactly(size), request.API_KEY, version)
    if answered_id != correlation_id:
        raise CodecError(f"response for correlation id {answered_id}, expected {correlation_id}")
    return body
