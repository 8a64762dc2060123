"""SaslHandshake (key 17) and SaslAuthenticate (key 36): the SASL exchange of a SASL listener.

Version notes:
- SaslHandshake v0: the mechanism's tokens then follow as raw size-prefixed frames (the connection
  handles those); v1: they come inside SaslAuthenticate requests. Both answer the offered mechanisms.
- SaslAuthenticate v0 carries the tokens; v1 adds session_lifetime_ms (KIP-368, from
  connections.max.reauth.ms); v2 is flexible.
- A failed attempt is answered after connection.failed.authentication.delay.ms (this connection's
  task waits; no other is held up), and the connection closes once the answer is out.
- On a listener without SASL both are ILLEGAL_SASL_STATE, as Kafka answers them.
"""

from __future__ import annotations

import asyncio

from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.sasl_authenticate import SaslAuthenticateRequest, SaslAuthenticateResponse
from odradek.protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
async def handle_sasl_handshake(
    request: SaslHandshakeRequest, context: RequestContext
) -> SaslHandshakeResponse:
    if context.sasl is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    result = context.sasl.handshake(request.mechanism, context.api_version)
    return SaslHandshakeResponse(error_code=result.error_code, mechanisms=result.mechanisms)


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
async def handle_sasl_authenticate(
    request: SaslAuthenticateRequest, context: RequestContext
) -> SaslAuthenticateResponse:
    if context.sasl is None:
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate request received on a listener without SASL",
            auth_bytes=b"",
        )
    result = context.sasl.authenticate(request.auth_bytes, context.api_version)
    if result.failed:
        await asyncio.sleep(context.sasl.sasl.failed_authentication_delay_ms / 1000)
    return SaslAuthenticateResponse(
        error_code=result.error_code,
        error_message=result.error_message,
        auth_bytes=result.auth_bytes,
        session_lifetime_ms=result.session_lifetime_ms,
    )
