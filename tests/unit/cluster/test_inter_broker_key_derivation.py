"""A broker logging in to another with SCRAM derives its salted password (PBKDF2, up to 16384 rounds)
in a worker thread, not on the event loop that serves its clients; it ran on the loop before, for as
many rounds as the peer asked (issue 25, item 11)."""

from __future__ import annotations

import asyncio
import struct
import threading
from typing import Any

import pytest
import scramp.core

from odradek.cluster.inter_broker_connection import (
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
    SaslLogin,
    open_inter_broker_connection,
)
from odradek.protocol.frames import decode_request, encode_response
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateResponse
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse
from odradek.security.authenticator import SaslAuthenticator
from odradek.security.sasl_config import ListenerSasl
from odradek.security.scram_credentials import credential_from_password

pytestmark = pytest.mark.timeout(30)

MECHANISM = "SCRAM-SHA-512"
SASL = ListenerSasl("INTERNAL", (MECHANISM,), {}, 1 << 20, 0, 0)
CREDENTIAL = credential_from_password(MECHANISM, "broker-secret", 16384)


async def _peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The SASL half of a broker: SaslHandshake and SaslAuthenticate, with odradek's authenticator."""
    authenticator = SaslAuthenticator(SASL, lambda user, mechanism: CREDENTIAL)
    try:
        while True:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            header, request = decode_request(await reader.readexactly(size))
            response: Any
            if isinstance(request, SaslHandshakeRequest):
                handshake = authenticator.handshake(request.mechanism, header.request_api_version)
                response = SaslHandshakeResponse(
                    error_code=handshake.error_code, mechanisms=handshake.mechanisms
                )
            else:
                result = authenticator.authenticate(request.auth_bytes, header.request_api_version)
                response = SaslAuthenticateResponse(
                    error_code=result.error_code,
                    error_message=result.error_message,
                    auth_bytes=result.auth_bytes,
                )
            writer.write(encode_response(response, header.request_api_version, header.correlation_id))
    except asyncio.IncompleteReadError:
        writer.close()


def test_the_salted_password_is_derived_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    derived_in: list[threading.Thread] = []
    real_hi = scramp.core.hi

    def recording_hi(*args: Any) -> Any:
        derived_in.append(threading.current_thread())
        return real_hi(*args)

    monkeypatch.setattr(scramp.core, "hi", recording_hi)

    async def scenario() -> threading.Thread:
        server = await asyncio.start_server(_peer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        security = InterBrokerSecurity(
            "INTERNAL", "SASL_PLAINTEXT", None, SaslLogin(MECHANISM, "broker", "broker-secret")
        )
        try:
            _reader, writer = await open_inter_broker_connection("127.0.0.1", port, security, "broker-2")
            writer.close()
            wrong = InterBrokerSecurity(
                "INTERNAL", "SASL_PLAINTEXT", None, SaslLogin(MECHANISM, "broker", "no")
            )
            with pytest.raises(InterBrokerAuthenticationError):
                await open_inter_broker_connection("127.0.0.1", port, wrong, "broker-2")
        finally:
            server.close()
        return threading.current_thread()

    loop_thread = asyncio.run(scenario())
    assert len(derived_in) == 2 and loop_thread not in derived_in
