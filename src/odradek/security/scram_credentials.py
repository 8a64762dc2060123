"""SCRAM credentials as Kafka stores them, and the single node's store of them.

A credential is never the password: Kafka (ScramFormatter) keeps the salt, the iteration count and two
keys derived from the salted password (RFC 5802): ``stored_key = H(HMAC(salted, "Client Key"))`` and
``server_key = HMAC(salted, "Server Key")``. AlterUserScramCredentials sends the salted password, so the
broker never sees the password either. Where they are kept is a `CredentialStore`: the first log dir's
file on a single node, ``/config/users/<user>`` in a ZooKeeper cluster (both in
odradek.cluster.metadata.scram_credentials).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, Protocol

log = logging.getLogger("odradek.security")

#: Kafka's ScramMechanism: name, wire type (AlterUserScramCredentials), hash, minimum iterations.
MECHANISMS: Final = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MECHANISM_BY_TYPE: Final = {wire: name for name, (wire, _) in MECHANISMS.items()}
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
_NOT_A_CREDENTIAL: Final = "SCRAM credential is not salt=...,stored_key=...,server_key=...,iterations=..."


class CredentialError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # the keys let an attacker try passwords offline: never in a log line
        return f"ScramCredential(iterations={self.iterations})"

    def to_json(self) -> dict[str, object]:
        encode = base64.b64encode
        return {
            "salt": encode(self.salt).decode(),
            "stored_key": encode(self.stored_key).decode(),
            "server_key": encode(self.server_key).decode(),
            "iterations": self.iterations,
        }

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> ScramCredential:
        decode = base64.b64decode
        return cls(
            decode(str(doc["salt"])),
            decode(str(doc["stored_key"])),
            decode(str(doc["server_key"])),
            int(str(doc["iterations"])),
        )


def credential_to_string(credential: ScramCredential) -> str:
    """Kafka's ScramCredentialUtils form, the value of a mechanism in /config/users/<user>."""
    encode = base64.b64encode
    return (
        f"salt={encode(credential.salt).decode()},stored_key={encode(credential.stored_key).decode()},"
        f"server_key={encode(credential.server_key).decode()},iterations={credential.iterations}"
    )


def credential_from_string(text: str) -> ScramCredential:
    """The inverse of `credential_to_string` (CredentialError unless exactly its four fields)."""
    fields: dict[str, str] = {}
    for token in text.split(","):
        name, separator, value = token.partition("=")
        if not separator or not name:
            raise CredentialError(
                "SCRAM credential is not salt=...,stored_key=...,server_key=...,iterations=..."
            )
        fields[name] = value
    if set(fields) != {"salt", "stored_key", "server_key", "iterations"}:
        raise CredentialError(_NOT_A_CREDENTIAL)
    try:
        return ScramCredential(
            base64.b64decode(fields["salt"], validate=True),
            base64.b64decode(fields["stored_key"], validate=True),
            base64.b64decode(fields["server_key"], validate=True),
            int(fields["iterations"]),
        )
    except ValueError as error:
        raise CredentialError(f"SCRAM credential has a bad field: {error}") from None


def credential_from_salted_password(
    mechanism: str, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    digest = MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(), server_key, iterations)


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's Hi(password, salt, i): PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism][1], password.encode(), salt, iterations)


def credential_from_password(mechanism: str, password: str, iterations: int) -> ScramCredential:
    salt = os.urandom(32)
    return credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


#: Credentials by user, then by mechanism name ("SCRAM-SHA-256").
UserCredentials = dict[str, dict[str, ScramCredential]]


class CredentialStore(Protocol):
    """Where SCRAM credentials live: the log dir on a single node, /config/users in a cluster
    (cluster/metadata/scram_credentials.py)."""

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        """What the SASL exchange checks (in memory: never waits)."""
        ...

    async def describe(self, users: Collection[str] | None) -> UserCredentials:
        """The users named (None: every user) that have a credential, as stored now."""
        ...

    async def alter(
        self, upserts: dict[tuple[str, str], ScramCredential], deletions: set[tuple[str, str]]
    ) -> None:
        """Apply one AlterUserScramCredentials change, durably, before returning."""
        ...
