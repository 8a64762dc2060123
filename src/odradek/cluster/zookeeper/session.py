"""kazoo, secured as Kafka's ZooKeeper client is: TLS, a SASL login, and an ACL on every znode created.

`ZooKeeperSecurity` is what the broker's settings ask for (built from them in cluster/zookeeper_security.py);
`secured_kazoo` makes the kazoo client that honours it:

- TLS through an `ssl.SSLContext` built by the caller (key and trust stores, protocols, cipher suites,
  host name check): kazoo's own TLS takes PEM files only and cannot narrow protocols or suites, so the
  handler wraps each connection with that context instead, and remembers why the last one failed (an
  untrusted certificate) so that a refused start-up can say so.
- SASL with DIGEST-MD5 (ZooKeeper's `DigestLoginModule`), through kazoo and pure-sasl.
- Every create, alone or in a multi, gets `znode_acls.default_acls` for its path: no caller can forget.
- No create or set writes more than ZooKeeper's packet limit (`MAX_ZNODE_BYTES`): refused before it
  is sent (ZnodeTooBigError), where the server would drop the connection.
- kazoo's DEBUG lines name each request's kind and path, never its data (SCRAM keys, configs) or an
  `Auth`'s credentials: kazoo writes requests whole.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kazoo.client import KazooClient, TransactionRequest
from kazoo.exceptions import AuthFailedError, ConnectionDropped, SessionClosedRequireSaslError
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.protocol.connection import ConnectionHandler
from kazoo.security import ACL

from odradek.cluster.zookeeper.errors import ZnodeTooBigError
from odradek.cluster.zookeeper.znode_acls import default_acls

#: The SASL mechanism of ZooKeeper's DigestLoginModule, the only one odradek logs in with.
DIGEST_MD5 = "DIGEST-MD5"


@dataclass(frozen=True)
class SaslLogin:
    """A DIGEST-MD5 login to ZooKeeper (a JAAS `Client` section's username and password)."""

    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class ZooKeeperSecurity:
    """How a broker's ZooKeeper sessions are secured; the default is Kafka's: not at all."""

    tls: ssl.SSLContext | None = None
    sasl: SaslLogin | None = None
    #: zookeeper.set.acl: znodes created belong to this session's identities (see znode_acls).
    secure_acls: bool = False


def secured_kazoo(hosts: str, security: ZooKeeperSecurity, **options: Any) -> KazooClient:
    """A kazoo client for `hosts` (with its chroot) honouring `security`; `options` are kazoo's."""
    handler = TlsHandler(security.tls) if security.tls is not None else SequentialThreadingHandler()
    sasl_options = None
    if security.sasl is not None:
        sasl_options = {
            "mechanism": DIGEST_MD5,
            "username": security.sasl.username,
            "password": security.sasl.password,
        }
    client = _SecuredKazooClient(
        security.secure_acls,
        hosts=hosts,
        handler=handler,
        sasl_options=sasl_options,
        use_ssl=security.tls is not None,  # only for kazoo's log lines: the handler does the TLS
        **options,
    )
    if _REQUESTS_WITHOUT_DATA not in client.logger.filters:
        client.logger.addFilter(_REQUESTS_WITHOUT_DATA)
    return client


class _RequestsWithoutData(logging.Filter):
    """Writes kazoo's requests and responses (namedtuples: Create, SetData, Auth, SASL, ...) in a log
    record as their kind and path alone."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(_kind_and_path(arg) for arg in record.args)
        return True


def _kind_and_path(arg: object) -> object:
    if isinstance(arg, bytes | bytearray):  # a response's data (below DEBUG)
        return f"<{len(arg)} bytes>"
    if not isinstance(arg, tuple):
        return arg
    if not hasattr(arg, "_fields"):  # a response: (data, ZnodeStat)
        return tuple(_kind_and_path(item) for item in arg)
    path = getattr(arg, "path", None)
    return f"{type(arg).__name__}(path={path!r})" if isinstance(path, str) else type(arg).__name__


_REQUESTS_WITHOUT_DATA = _RequestsWithoutData()


def last_tls_error(client: KazooClient) -> str | None:
    """Why the last TLS connection of `client` failed, if it did (None for a client without TLS)."""
    handler = client.handler
    return handler.last_error if isinstance(handler, TlsHandler) else None


class TlsHandler(SequentialThreadingHandler):  # type: ignore[misc]
    """kazoo's threading handler whose connections are TLS with the caller's context."""

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__()
        self.context = context
        self.last_error: str | None = None

    def create_connection(
        self,
        address: tuple[str, int],
        hostname: str | None = None,
        timeout: float | None = None,
        **_kazoo_tls_options: Any,  # kazoo's PEM file names and flags: the context replaces them
    ) -> ssl.SSLSocket:
        try:
            plain = socket.create_connection(address, timeout)
        except OSError as error:
            self.last_error = None  # not a TLS failure: the caller's own message says "could not connect"
            raise error
        try:
            plain.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # the handshake runs here, within the socket's timeout; the peer's name is checked when the
            # context asks for it (zookeeper.ssl.endpoint.identification.algorithm=HTTPS)
            connection = self.context.wrap_socket(plain, server_hostname=hostname)
        except OSError as error:
            plain.close()
            self.last_error = _describe(error)
            raise
        self.last_error = None
        return connection


def _describe(error: OSError) -> str:
    if isinstance(error, ssl.SSLCertVerificationError):
        return f"TLS handshake failed: certificate verify failed: {error.verify_message or error.reason}"
    if isinstance(error, ssl.SSLError):
        return f"TLS handshake failed: {error.reason or error}"
    return f"TLS handshake failed: {error.strerror or error}"


#: The most data one create or set writes. ZooKeeper's packet limit (jute.maxbuffer) is 0xfffff bytes
#: by default, the path and header included: a bigger write (20,000 ACLs on one resource, a token with
#: tens of thousands of renewers) makes the server drop the connection, which fires every watch of the
#: broker again and leaves the write unanswered until the session timeout. Kafka sends it anyway.
MAX_ZNODE_BYTES: Final = 1_000_000


def _check_size(path: str, value: bytes | None) -> None:
    if value is not None and len(value) > MAX_ZNODE_BYTES:
        raise ZnodeTooBigError(f"{path} would hold {len(value)} bytes, over ZooKeeper's {MAX_ZNODE_BYTES}")


class _SecuredKazooClient(KazooClient):  # type: ignore[misc]
    """kazoo's client, with the ACLs of `default_acls` on every create, no write over ZooKeeper's packet
    limit, and a SASL failure fix."""

    def __init__(self, secure_acls: bool, **options: Any) -> None:
        super().__init__(**options)
        self.secure_acls = secure_acls
        # kazoo's own handler, replaced before it ever connects (as kazoo builds it, with our fix)
        self._connection = _ConnectionHandler(
            self, self._conn_retry.copy(), logger=self.logger, sasl_options=options.get("sasl_options")
        )

    def create_async(
        self, path: str, value: bytes = b"", acl: Sequence[ACL] | None = None, **options: Any
    ) -> Any:
        _check_size(path, value)
        return super().create_async(path, value, acl or default_acls(path, self.secure_acls), **options)

    def set_async(self, path: str, value: bytes, version: int = -1) -> Any:
        _check_size(path, value)
        return super().set_async(path, value, version)

    def transaction(self) -> TransactionRequest:
        return _Transaction(self)


class _Transaction(TransactionRequest):  # type: ignore[misc]
    client: _SecuredKazooClient

    def create(self, path: str, value: bytes = b"", acl: Sequence[ACL] | None = None, **options: Any) -> None:
        _check_size(path, value)
        super().create(path, value, acl or default_acls(path, self.client.secure_acls), **options)

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        _check_size(path, value)
        super().set_data(path, value, version)


class _ConnectionHandler(ConnectionHandler):  # type: ignore[misc]
    def _authenticate_with_sasl(self, host: str, timeout: float) -> None:
        try:
            super()._authenticate_with_sasl(host, timeout)
        except SessionClosedRequireSaslError as error:
            # A server with enforce.auth answers a failed login so; kazoo 2.11 lets that error end its
            # connection thread (a traceback, then silence): make it the failed login it is.
            raise AuthFailedError("the server refused the SASL login") from error
        except AuthFailedError as error:
            if isinstance(error.__cause__, ConnectionDropped):
                # kazoo reads any drop during the exchange as a refusal ("Connection dropped in SASL":
                # servers before 3.6 closed the connection on one), stops for good and loses the
                # session. ZooKeeper 3.6+ answers a refusal with AUTHFAILED before closing, and Kafka's
                # client (ClientCnxn) takes a drop for what it is: reconnect, same session, log in again.
                raise ConnectionDropped(f"dropped during the SASL login: {error.__cause__}") from error
            raise
