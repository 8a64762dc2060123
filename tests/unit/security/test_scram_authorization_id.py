"""SCRAM's GS2 header may carry an authorization id (`n,a=<name>,`, RFC 5802). Kafka's ScramSaslServer
accepts one equal to the username and refuses any other ("Client requested an authorization id that is
different from username"); odradek refused every authorization id as a malformed message (scramp
requires it empty), so clients that send the username there could not log in. Built by hand: scramp's
client never sends one.

A client-final message repeating an attribute (a second `p=` or `r=` among the extensions) was accepted
when its proof was computed over it, though docs/security.md said a repeated attribute is refused (as
scramp refuses them in the client-first)."""

from __future__ import annotations

import base64
import hashlib
import hmac

from odradek.protocol.error_codes import ErrorCode
from odradek.security.authenticator import SaslAuthenticator, SaslState
from odradek.security.sasl_config import ListenerSasl
from odradek.security.scram_credentials import ScramCredential, credential_from_password

MECHANISM = "SCRAM-SHA-256"
SASL = ListenerSasl("SASL_PLAINTEXT", (MECHANISM,), {}, 1 << 20, 0, 0)
PASSWORDS = {"carol": "carol-secret", "a,b=c": "comma-secret"}
CREDENTIALS = {
    user: credential_from_password(MECHANISM, password, 4096) for user, password in PASSWORDS.items()
}


def lookup(user: str, mechanism: str) -> ScramCredential | None:
    return CREDENTIALS.get(user) if mechanism == MECHANISM else None


def saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def log_in(user: str, gs2_header: str, extensions: str = "") -> tuple[SaslAuthenticator, ErrorCode, str]:
    """A whole exchange as `user` with `gs2_header`; the client-final carries `extensions` (",k=v...")
    before its proof, computed over them. Returns the authenticator, the last answer's error code and
    its message (or, on success, whether the server's signature checked out)."""
    authenticator = SaslAuthenticator(SASL, lookup)
    authenticator.handshake(MECHANISM, 1)
    bare = f"n={saslname(user)},r=client-nonce"
    first = authenticator.authenticate((gs2_header + bare).encode(), 1)
    if first.error_code is not ErrorCode.NONE:
        return authenticator, first.error_code, first.error_message or ""
    server_first = first.auth_bytes.decode()
    attributes = dict(part.split("=", 1) for part in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", PASSWORDS[user].encode(), base64.b64decode(attributes["s"]), int(attributes["i"])
    )
    without_proof = f"c={base64.b64encode(gs2_header.encode()).decode()},r={attributes['r']}{extensions}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = authenticator.authenticate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode(), 1)
    if final.error_code is not ErrorCode.NONE:
        return authenticator, final.error_code, final.error_message or ""
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    expected = "v=" + base64.b64encode(hmac.new(server_key, auth_message, "sha256").digest()).decode()
    return (
        authenticator,
        final.error_code,
        "server signature ok" if final.auth_bytes.decode() == expected else "",
    )


def test_an_authorization_id_equal_to_the_username_logs_in_as_that_user() -> None:
    authenticator, code, message = log_in("carol", "n,a=carol,")
    assert (code, message) == (ErrorCode.NONE, "server signature ok"), message  # refused before the fix
    assert authenticator.state is SaslState.COMPLETE and authenticator.principal == "User:carol"


def test_an_escaped_authorization_id_is_compared_with_the_username_it_names() -> None:
    authenticator, code, message = log_in("a,b=c", "n,a=a=2Cb=3Dc,")
    assert (code, message) == (ErrorCode.NONE, "server signature ok"), message
    assert authenticator.principal == "User:a,b=c"


def test_an_authorization_id_other_than_the_username_is_refused_as_kafka_refuses_it() -> None:
    authenticator, code, message = log_in("carol", "n,a=alice,")
    assert code is ErrorCode.SASL_AUTHENTICATION_FAILED
    assert (
        message
        == "Authentication failed: Client requested an authorization id that is different from username"
    )
    assert authenticator.state is SaslState.FAILED


def test_an_empty_authorization_id_is_refused() -> None:
    _, code, _ = log_in("carol", "n,a=,")
    assert code is ErrorCode.SASL_AUTHENTICATION_FAILED


def test_no_authorization_id_still_logs_in() -> None:
    _, code, message = log_in("carol", "n,,")
    assert (code, message) == (ErrorCode.NONE, "server signature ok")


def test_a_client_final_repeating_an_attribute_is_refused_even_with_a_proof_over_it() -> None:
    for extensions in (",p=AAAA", ",r=another-nonce", ",c=biws", ",x=1,x=2"):
        authenticator, code, _message = log_in("carol", "n,,", extensions)
        assert code is ErrorCode.SASL_AUTHENTICATION_FAILED, extensions  # accepted before the fix
        assert authenticator.state is SaslState.FAILED


def test_a_client_final_with_an_extension_of_its_own_still_logs_in() -> None:
    _, code, message = log_in("carol", "n,,", ",x=1")  # RFC 5802 extensions are allowed, as in Kafka
    assert (code, message) == (ErrorCode.NONE, "server signature ok")
