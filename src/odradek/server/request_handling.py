"""One request of a connection: decoded, admitted, handled and answered (or refused).

A frame is decoded and handed to its API's handler with a `RequestContext`; the answer is encoded into
the connection's `ResponseWriter`. Client quotas are measured around the handler, and a throttled
answer mutes the connection (KIP-219). A handler's failure is answered with the error code in the
answer's shape (Kafka's `handleError`); an API or version not served closes the connection, except
ApiVersions, answered in v0.

On a SASL listener the connection's `SaslAuthenticator` admits only ApiVersions and the SASL APIs until
authentication completes (anything else closes the connection unanswered, as Kafka), takes a v0
handshake's raw token frames itself, and the connection keeps frames to `sasl.server.max.receive.size`
meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final, Protocol

from odradek.handlers._common.context import CloseConnection, RequestContext
from odradek.handlers._common.registry import registration_for
from odradek.handlers._common.services import Services
from odradek.handlers.api_versions import unsupported_version_response
from odradek.partition.errors import error_code_for
from odradek.partition.purgatory import delayed_seconds
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.error_response import error_response
from odradek.protocol.frames import (
    UnsupportedRequestError,
    decode_request,
    encode_response_into,
    read_request_header,
)
from odradek.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from odradek.protocol.messages.request_header import RequestHeader
from odradek.security.authenticator import SaslAuthenticator, SaslState
from odradek.server.client_throttling import before_handling, throttle_time_ms
from odradek.server.framing import FrameReader
from odradek.server.output import ResponseWriter

log = logging.getLogger("odradek.connection")

#: What a SASL connection may send before it has authenticated.
_SASL_APIS: Final = frozenset((ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE))


class ServedConnection(Protocol):
    """What handling a request needs of its connection."""

    services: Services
    connection_id: int
    listener: str
    peer: tuple[str, int]
    closed: bool
    writer: ResponseWriter | None
    sasl: SaslAuthenticator | None
    reader: FrameReader
    max_request_bytes: int
    #: The client software (name, version) its ApiVersions v3+ named (KIP-511), for client telemetry.
    client_software: tuple[str, str] | None

    @property
    def principal(self) -> str: ...

    @property
    def security_protocol(self) -> str: ...

    def close(self) -> None: ...

    def mute(self, throttle_ms: int) -> None: ...


async def handle_frame(connection: ServedConnection, frame: bytearray) -> None:
    """Handle one request frame and write its answer (CloseConnection: close without one)."""
    sasl = connection.sasl
    if sasl is not None and not sasl.allows_request():
        if sasl.state is SaslState.RAW_TOKENS:
            await _raw_sasl_token(connection, sasl, frame)
            return
        if not _sasl_may_send(connection, sasl, frame):
            connection.close()  # as Kafka: unanswered, the request body not even decoded
            return
    try:
        header, request = decode_request(frame)
    except UnsupportedRequestError as error:
        _answer_unsupported(connection, error.header, str(error))
        return
    except CodecError as error:
        log.info("closing connection from %s:%d: malformed request: %s", *connection.peer, error)
        connection.close()
        return
    services = connection.services
    registration = registration_for(header.request_api_key, header.request_api_version, services.cluster.mode)
    if registration is None:
        _answer_unsupported(connection, header, "not served")
        return
    context = RequestContext(
        header=header,
        api_version=header.request_api_version,
        client_host=connection.peer[0],
        client_port=connection.peer[1],
        listener=connection.listener,
        services=services,
        principal=connection.principal,
        security_protocol=connection.security_protocol,
        sasl=sasl,
        closed=lambda: connection.closed,
        connection_id=connection.connection_id,
        client_software=connection.client_software,
    )
    try:
        quotas = services.client_quotas
        measured = quotas.active  # read once: the first AlterClientQuotas turns it on while it runs
        if measured:
            user, client_id = quotas.user_of(context.principal), header.client_id or ""
            version = header.request_api_version
            delayed_seconds.set(0.0)
            started = time.perf_counter()
            fetch_quota = before_handling(quotas, header.request_api_key, version, request, user, client_id)
            context.fetch_quota = fetch_quota
        response = await registration.handler(request, context)
        if measured:
            throttle_ms = throttle_time_ms(
                quotas,
                header.request_api_key,
                header.request_api_version,
                request,
                response,
                len(frame),
                time.perf_counter() - started - delayed_seconds.get(),
                user,
                client_id,
                fetch_quota,
            )
            if throttle_ms > 0:
                connection.mute(throttle_ms)  # from after the response (queued below) is written
        if response is None or connection.closed:
            return  # acks=0 produce: Kafka sends nothing back
        if isinstance(response, ApiVersionsResponse) and header.request_api_version >= 3:
            _remember_client_software(connection, request, response)
        writer = connection.writer
        assert writer is not None
        out = writer.new_output()
        encode_response_into(out, response, header.request_api_version, header.correlation_id)
    except CloseConnection:
        raise
    except asyncio.CancelledError:
        serving = asyncio.current_task()
        if serving is None or serving.cancelling():
            raise  # the connection's serving is being stopped
        # A task the handler shared with others (a load, a creation) was cancelled, not this request:
        # raised on, it would end the serving task as cancelled, the connection left open and unserved.
        _answer_failure(connection, header, request, RuntimeError("a task the request awaited was cancelled"))
        return
    except Exception as error:
        _answer_failure(connection, header, request, error)
        return
    await writer.send(out)
    if sasl is not None and header.request_api_key in _SASL_APIS:
        _after_sasl_step(connection, sasl, getattr(response, "error_message", None))


def _remember_client_software(
    connection: ServedConnection, request: ApiVersionsRequest, response: ApiVersionsResponse
) -> None:
    """As Kafka's ClientInformation: the software an accepted ApiVersions v3+ named is the connection's."""
    if response.error_code == ErrorCode.NONE:
        connection.client_software = (request.client_software_name, request.client_software_version)


def count_unexpected_error(connection: ServedConnection, frame: bytearray) -> None:
    """A bug or a failing disk escaped a handler: logged with its traceback and counted in
    `odradek_unexpected_errors_total`, as the admin handlers count theirs, so that it is seen."""
    # The header itself may be what failed, so the api key is read from the frame's first bytes; one
    # that is no Kafka API counts as -1, so that garbage cannot add metric labels without end.
    try:
        api: ApiKey | None = ApiKey(int.from_bytes(frame[:2], signed=True))
    except ValueError:
        api = None
    connection.services.unexpected_errors[-1 if api is None else int(api)] += 1
    log.exception(
        "closing connection from %s:%d after an unexpected error handling %s",
        *connection.peer,
        "an unknown api key" if api is None else api.name,
    )


def _answer_failure(
    connection: ServedConnection, header: RequestHeader, request: Any, error: Exception
) -> None:
    """As Kafka's `handleError`: a request whose handling failed is answered with the error code in
    its response's shape (UNKNOWN_SERVER_ERROR for the unexpected, counted and logged once with its
    traceback) and the connection serves the next one. An acks=0 Produce has no answer to carry the
    error and a failed SASL step leaves authentication undecided: those close, as in Kafka."""
    code = error_code_for(error)
    api = ApiKey(header.request_api_key)
    if code is ErrorCode.UNKNOWN_SERVER_ERROR:
        connection.services.unexpected_errors[int(api)] += 1
        log.error(
            "unexpected error handling %s (v%d) from %s:%d; answered UNKNOWN_SERVER_ERROR",
            api.name,
            header.request_api_version,
            *connection.peer,
            exc_info=error,
        )
    else:
        log.info("%s from %s:%d failed: %s (%s)", api.name, *connection.peer, code.name, error)
    no_answer = api is ApiKey.PRODUCE and getattr(request, "acks", 1) == 0
    writer = connection.writer
    if no_answer or connection.closed or writer is None:
        connection.close()
        return
    out = writer.new_output()
    answer = error_response(request, header.request_api_version, code)
    encode_response_into(out, answer, header.request_api_version, header.correlation_id)
    writer.write_now(out)
    if api in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
        connection.close()  # the answer goes out first


def _answer_unsupported(connection: ServedConnection, header: RequestHeader, reason: str) -> None:
    """ApiVersions newer than ours gets a v0 error answer; any other unknown (key, version) closes."""
    if header.request_api_key == ApiKey.API_VERSIONS:
        writer = connection.writer
        assert writer is not None
        out = writer.new_output()
        encode_response_into(out, unsupported_version_response(), 0, header.correlation_id)
        writer.write_now(out)
        return
    log.info(
        "closing connection from %s:%d: api key %d version %d %s",
        *connection.peer,
        header.request_api_key,
        header.request_api_version,
        reason,
    )
    connection.close()


def _sasl_may_send(connection: ServedConnection, sasl: SaslAuthenticator, frame: bytearray) -> bool:
    """Before authentication (or once the session has expired) only ApiVersions and the SASL APIs."""
    try:
        api_key = read_request_header(frame)[0].request_api_key
    except CodecError:
        api_key = -1
    if api_key in _SASL_APIS:
        return True
    log.info(
        "closing connection from %s:%d: api key %d %s",
        *connection.peer,
        api_key,
        "after its SASL session expired" if sasl.authenticated else "before SASL authentication",
    )
    return False


async def _raw_sasl_token(connection: ServedConnection, sasl: SaslAuthenticator, frame: bytearray) -> None:
    """After a v0 SaslHandshake, a frame is the mechanism's token and the answer a raw frame too. A
    failure cannot be told in this framing: the connection closes after the delay, as Kafka's."""
    result = sasl.authenticate(bytes(frame), 0)
    if result.failed:
        await asyncio.sleep(sasl.sasl.failed_authentication_delay_ms / 1000)
    elif connection.writer is not None:
        out = connection.writer.new_output()
        out += len(result.auth_bytes).to_bytes(4, "big") + result.auth_bytes
        connection.writer.write_now(out)
    _after_sasl_step(connection, sasl, result.error_message)


def _after_sasl_step(connection: ServedConnection, sasl: SaslAuthenticator, message: str | None) -> None:
    if sasl.state is SaslState.FAILED:
        log.info("failed authentication with %s:%d (%s)", *connection.peer, message or "SASL state error")
        connection.close()  # the answer already given goes out first
    elif sasl.state is SaslState.COMPLETE:
        reader = connection.reader
        if reader.max_frame_bytes < connection.max_request_bytes:
            reader.max_frame_bytes = connection.max_request_bytes
            log.debug("authenticated %s from %s:%d", sasl.principal, *connection.peer)
