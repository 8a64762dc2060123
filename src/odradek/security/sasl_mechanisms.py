"""The SASL server mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802/7677, with `scramp`).

Each takes the client's tokens in turn and answers the next server token; `complete` turns true when the
client is authenticated, and a refused client raises SaslAuthenticationError with the message Kafka's
mechanism gives (the client shows it to its user, so it never says which part was wrong).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from typing import Protocol

import scramp

from odradek.security.delegation_tokens import TOKEN_AUTH_EXTENSION, TokenCredential
from odradek.security.scram_credentials import MECHANISMS, ScramCredential

INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"
INVALID_SCRAM_CREDENTIALS = "Authentication failed: Invalid user credentials"
INVALID_CLIENT_FINAL = "Authentication failed: invalid SCRAM client final message"
INVALID_TOKEN = "Token Authentication failed: Invalid tokenId"


class SaslAuthenticationError(Exception):
    """The client failed to authenticate; the message goes back to it in SaslAuthenticate."""


class SaslServer(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str

    def evaluate(self, token: bytes) -> bytes: ...


class PlainServer:
    """One token, ``authzid NUL authcid NUL password``, checked against the JAAS config's users."""

    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("Authentication failed: the PLAIN exchange is already complete")
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authzid, username, password = (part.decode("utf-8", "replace") for part in parts)
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self.users.get(username)
        # compare_digest even for an unknown user, so the answer's timing says nothing about who exists
        if (
            not hmac.compare_digest(password.encode(), (expected or "\0" + password).encode())
            or expected is None
        ):
            raise SaslAuthenticationError(INVALID_CREDENTIALS)
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        self.complete = True
        self.authorization_id = username
        return b""


class ScramServer:
    """Two rounds: client-first -> server-first (salt, iterations, nonce); client-final (proof) ->
    server-final (the server's signature).

    scramp reads the client-first message and writes the server-first; the client-final is checked
    here, as Kafka's ScramSaslServer checks it: the nonce must *end with* the server's nonce, not equal
    it. librdkafka before 2.1 (Debian's kcat) sends its client nonce twice, and Kafka accepts that.
    """

    def __init__(
        self,
        mechanism: str,
        credential_of: Callable[[str, str], ScramCredential | None],
        token_of: Callable[[str, str], TokenCredential | None] | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.credential_of = credential_of
        self.token_of = token_of
        #: Set when the client-first asked for a delegation token (`tokenauth=true`): the token found.
        self.token: TokenCredential | None = None
        self.token_auth = False
        #: The client-first-bare as sent, extensions included: the proof covers them (RFC 5802).
        self.client_first_bare = ""
        self.complete = False
        self.authorization_id = ""
        self.username = ""
        self.digest = MECHANISMS[mechanism][1]
        self.server = scramp.ScramMechanism(mechanism).make_server(self._auth_info)
        self.credential: ScramCredential | None = None
        self.round = 0
        self.unknown_user = False
        #: The client-first message's GS2 header, which the client-final's `c=` must carry back.
        self.gs2_header = b""

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Authentication failed: the SCRAM message is not UTF-8") from None
        try:
            if self.round == 0:
                self.round = 1
                authorization_id, without_it = _take_authorization_id(message)
                without_extensions, extensions = _take_extensions(without_it)
                self.token_auth = extensions.get(TOKEN_AUTH_EXTENSION, "").lower() == "true"
                self.client_first_bare = without_it.split(",", 2)[-1]
                self.server.set_client_first(without_extensions)
                self.gs2_header = message[: message.index(",", message.index(",") + 1) + 1].encode()
                if authorization_id is not None and _name_of(authorization_id) != self.username:
                    raise SaslAuthenticationError(
                        "Authentication failed: Client requested an authorization id that is different "
                        "from username"
                    )
                return str(self.server.get_server_first()).encode()
            if self.round == 1:
                self.round = 2
                final = self._client_final(message)
                self.complete = True
                self.authorization_id = self.token.owner if self.token is not None else self.username
                return final.encode()
        except scramp.ScramException as error:
            # scramp wraps what _auth_info raises; an unknown user fails as a wrong password does
            if self.unknown_user:
                raise SaslAuthenticationError(
                    INVALID_TOKEN if self.token_auth else INVALID_SCRAM_CREDENTIALS
                ) from None
            raise SaslAuthenticationError(f"Authentication failed: invalid SCRAM message ({error})") from None
        raise SaslAuthenticationError("Authentication failed: the SCRAM exchange is already complete")

    def _auth_info(self, username: str) -> tuple[bytes, bytes, bytes, int]:
        name = _name_of(username)
        if self.token_auth:
            # Kafka's DelegationTokenCredentialCallback: the username is the token's id
            self.token = self.token_of(name, self.mechanism) if self.token_of is not None else None
            credential = self.token.credential if self.token is not None else None
        else:
            credential = self.credential_of(name, self.mechanism)
        if credential is None:
            self.unknown_user = True
            raise KeyError("unknown user")
        self.username = name
        self.credential = credential
        return credential.salt, credential.stored_key, credential.server_key, credential.iterations

    def _client_final(self, message: str) -> str:
        """Check ``c=<gs2 header>,r=<nonce>[,extensions],p=<proof>`` and answer ``v=<server signature>``.

        Every malformed part is a failed authentication: the attributes in RFC 5802's order, none
        repeated (as scramp refuses in the client-first; Kafka takes a repeated one for an extension,
        which the proof covers, but no client sends one), `c` the base64 of the client-first's GS2
        header (no channel binding), `r` ending with the server's nonce, `p` the base64 of a proof of
        the hash's length."""
        credential = self.credential
        parts = message.split(",")
        names = [part.partition("=")[0] for part in parts]
        if (
            credential is None
            or len(parts) < 3
            or not parts[0].startswith("c=")
            or not parts[1].startswith("r=")
            or not parts[-1].startswith("p=")
            or len(set(names)) != len(names)
        ):
            raise SaslAuthenticationError(INVALID_CLIENT_FINAL)
        channel_binding = _base64(parts[0][2:])
        if channel_binding is None:
            raise SaslAuthenticationError(INVALID_CLIENT_FINAL)
        if channel_binding != self.gs2_header:
            raise SaslAuthenticationError("Authentication failed: SCRAM channel binding is not supported")
        if not parts[1][2:].endswith(str(self.server.nonce)):
            raise SaslAuthenticationError(
                "Authentication failed: Invalid client nonce in the final client message."
            )
        without_proof = message[: -len(parts[-1]) - 1]
        auth_message = f"{self.client_first_bare},{self.server.server_first},{without_proof}".encode()
        client_signature = hmac.new(credential.stored_key, auth_message, self.digest).digest()
        proof = _base64(parts[-1][2:])
        if proof is None or len(proof) != len(client_signature):
            raise SaslAuthenticationError(INVALID_SCRAM_CREDENTIALS)
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self.digest, client_key).digest(), credential.stored_key):
            raise SaslAuthenticationError(INVALID_SCRAM_CREDENTIALS)
        server_signature = hmac.new(credential.server_key, auth_message, self.digest).digest()
        return "v=" + base64.b64encode(server_signature).decode()


def _take_authorization_id(client_first: str) -> tuple[str | None, str]:
    """The authorization id of a client-first's GS2 header (`n,a=<saslname>,...`), if any, and the
    message without it: scramp refuses any, Kafka accepts the username's own (checked by the caller)."""
    flag, separator, rest = client_first.partition(",")
    if separator and rest.startswith("a="):
        authorization_id, separator, bare = rest[2:].partition(",")
        if separator:
            return authorization_id, f"{flag},,{bare}"
    return None, client_first


def _take_extensions(client_first: str) -> tuple[str, dict[str, str]]:
    """The client-first without the extensions after its nonce (`,tokenauth=true`: Kafka's
    ScramExtensions), which scramp refuses, and those extensions by name."""
    gs2_flag, gs2_authzid, bare = client_first.split(",", 2) if client_first.count(",") >= 2 else ("", "", "")
    if not bare:
        return client_first, {}
    attributes = bare.split(",")
    kept = 0
    for index, attribute in enumerate(attributes):
        if attribute.startswith("r="):
            kept = index + 1
            break
    if kept == 0 or kept == len(attributes):
        return client_first, {}
    extensions = {}
    for attribute in attributes[kept:]:
        name, _, value = attribute.partition("=")
        extensions[name] = value
    return ",".join([gs2_flag, gs2_authzid, *attributes[:kept]]), extensions


def _name_of(saslname: str) -> str:
    # SCRAM escapes ',' and '=' in a name (RFC 5802 saslname), as Kafka's ScramFormatter undoes; an
    # authorization id is unescaped too (Kafka compares it escaped, so refuses the username's own there).
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _base64(text: str) -> bytes | None:
    """`text` decoded as strict base64; None if it is not."""
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error, and non-ASCII text
        return None
