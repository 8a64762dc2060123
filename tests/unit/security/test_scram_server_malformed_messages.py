"""The SCRAM server given malformed client messages: every one is a clean authentication failure
(SASL_AUTHENTICATION_FAILED, which the handler answers after the failed-login delay), never another
exception. A `c=` attribute that was not base64 raised binascii.Error out of the exchange: a traceback
in the log, UNKNOWN_SERVER_ERROR to the client, and no failed-login delay (issue 25, item 11)."""

from __future__ import annotations

import base64
import string

import scramp
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.protocol.error_codes import ErrorCode
from odradek.security.authenticator import SaslAuthenticator, SaslState
from odradek.security.sasl_config import ListenerSasl
from odradek.security.scram_credentials import ScramCredential, credential_from_password

MECHANISM = "SCRAM-SHA-256"
SASL = ListenerSasl("SASL_PLAINTEXT", (MECHANISM,), {}, 1 << 20, 0, 0)
CREDENTIAL = credential_from_password(MECHANISM, "carol-secret", 4096)


def lookup(user: str, mechanism: str) -> ScramCredential | None:
    return CREDENTIAL if (user, mechanism) == ("carol", MECHANISM) else None


def after_client_first() -> tuple[SaslAuthenticator, scramp.ScramClient]:
    """An exchange waiting for the client-final message of a real client."""
    authenticator = SaslAuthenticator(SASL, lookup)
    authenticator.handshake(MECHANISM, 1)
    client = scramp.ScramClient([MECHANISM], "carol", "carol-secret")
    first = authenticator.authenticate(client.get_client_first().encode(), 1)
    assert first.error_code is ErrorCode.NONE
    client.set_server_first(first.auth_bytes.decode())
    return authenticator, client


def assert_refused_cleanly(authenticator: SaslAuthenticator, token: bytes) -> None:
    result = authenticator.authenticate(token, 1)  # raised for some tokens before the fix
    assert result.error_code is ErrorCode.SASL_AUTHENTICATION_FAILED, token
    assert result.error_message and result.error_message.startswith("Authentication failed")
    assert authenticator.state is SaslState.FAILED


def test_a_c_attribute_that_is_not_base64_is_an_authentication_failure() -> None:
    authenticator, client = after_client_first()
    final = client.get_client_final()
    assert final.startswith("c=biws,")
    assert_refused_cleanly(authenticator, ("c=biw" + final[6:]).encode())


def test_a_channel_binding_other_than_the_client_first_header_is_an_authentication_failure() -> None:
    authenticator, client = after_client_first()
    final = client.get_client_final()
    binding = base64.b64encode(b"p=tls-unique,,binding-data").decode()
    assert_refused_cleanly(authenticator, final.replace("c=biws", "c=" + binding, 1).encode())


# ----- fuzzed ---------------------------------------------------------------------------------------

base64_text = st.binary(max_size=40).map(lambda data: base64.b64encode(data).decode())
junk = st.text(alphabet=string.printable + "é\0=,", max_size=40)
attribute_value = st.one_of(base64_text, junk, base64_text.map(lambda text: text.rstrip("=")))


@st.composite
def client_final_messages(draw: st.DrawFn, client_final: str) -> str:
    """The real client-final message with its attributes replaced, dropped, repeated or reordered."""
    attributes = [part.split("=", 1) for part in client_final.split(",")]
    mutated: list[str] = []
    for name, value in attributes:
        choice = draw(st.integers(0, 4))
        if choice == 0:
            mutated.append(f"{name}={value}")
        elif choice == 1:
            mutated.append(f"{name}={draw(attribute_value)}")
        elif choice == 2:
            continue  # missing
        elif choice == 3:
            mutated += [f"{name}={value}", f"{name}={draw(attribute_value)}"]
        else:
            mutated.append(f"{draw(st.sampled_from(['c', 'r', 'p', 'x', 'm', '']))}={draw(attribute_value)}")
    if draw(st.booleans()):
        mutated = draw(st.permutations(mutated))
    return ",".join(mutated)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzzed_client_final_messages_fail_authentication_cleanly(data: st.DataObject) -> None:
    authenticator, client = after_client_first()
    real = client.get_client_final()
    message = data.draw(client_final_messages(real))
    if message == real:
        return
    assert_refused_cleanly(authenticator, message.encode())


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), junk.map(str.encode)))
def test_fuzzed_client_final_bytes_fail_authentication_cleanly(token: bytes) -> None:
    authenticator, _client = after_client_first()
    assert_refused_cleanly(authenticator, token)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda gs2, user, nonce, extra: f"{gs2}n={user},r={nonce}{extra}",
            st.sampled_from(["n,,", "y,,", "p=tls-unique,,", "n,a=carol,", "x,,", "n,", ""]),
            st.sampled_from(["carol", "", "=2C", "=", "ca=rol", "nobody"]),
            st.one_of(st.just("abc"), junk),
            st.one_of(st.just(""), junk.map(lambda text: "," + text)),
        ),
    )
)
def test_fuzzed_client_first_messages_fail_or_go_on_cleanly(token: bytes | str) -> None:
    authenticator = SaslAuthenticator(SASL, lookup)
    authenticator.handshake(MECHANISM, 1)
    result = authenticator.authenticate(token.encode() if isinstance(token, str) else token, 1)
    assert result.error_code in (ErrorCode.NONE, ErrorCode.SASL_AUTHENTICATION_FAILED)
