"""SCRAM credentials kept as Kafka keeps them (salt, stored key, server key, iterations), and their file."""

from __future__ import annotations

import asyncio
import base64
import json
import stat
from pathlib import Path

import pytest
import scramp

from odradek.cluster.metadata.scram_credentials import FILE_NAME, LocalScramCredentialStore
from odradek.security.scram_credentials import (
    CredentialError,
    credential_from_password,
    credential_from_salted_password,
    salted_password,
)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_keys_derived_from_the_salted_password_match_rfc_5802(mechanism: str) -> None:
    salt = b"0123456789abcdef"
    credential = credential_from_salted_password(
        mechanism, salt, salted_password(mechanism, "pencil", salt, 4096), 4096
    )
    # scramp as an independent implementation of RFC 5802's StoredKey and ServerKey
    expected = scramp.ScramMechanism(mechanism).make_auth_info("pencil", 4096, salt)
    assert (credential.salt, credential.stored_key, credential.server_key, credential.iterations) == expected


def test_rfc_7677_salted_password() -> None:
    # RFC 7677's example: user "user", password "pencil", this salt, 4096 iterations
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    salted = salted_password("SCRAM-SHA-256", "pencil", salt, 4096)
    assert base64.b64encode(salted).decode() == "xKSVEDI6tPlSysH6mUQZOeeOp01r6B3fcJbodRPcYV0="


def test_store_round_trip_is_owner_only_and_holds_no_password(tmp_path: Path) -> None:
    store = LocalScramCredentialStore.load(tmp_path)
    credential = credential_from_password("SCRAM-SHA-512", "very-secret", 8192)
    asyncio.run(store.alter({("alice", "SCRAM-SHA-512"): credential}, set()))
    path = tmp_path / FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "very-secret" not in text
    assert set(json.loads(text)["users"]["alice"]["SCRAM-SHA-512"]) == {
        "salt",
        "stored_key",
        "server_key",
        "iterations",
    }
    again = LocalScramCredentialStore.load(tmp_path)
    assert again.get("alice", "SCRAM-SHA-512") == credential
    asyncio.run(again.alter({}, {("alice", "SCRAM-SHA-512")}))
    assert LocalScramCredentialStore.load(tmp_path).users() == []


def test_credential_repr_shows_no_key() -> None:
    credential = credential_from_password("SCRAM-SHA-256", "pw", 4096)
    assert repr(credential) == "ScramCredential(iterations=4096)"


def test_unreadable_store_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("{not json")
    with pytest.raises(CredentialError, match="cannot read SCRAM credentials"):
        LocalScramCredentialStore.load(tmp_path)
