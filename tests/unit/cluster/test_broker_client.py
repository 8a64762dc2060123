"""A broker's own connection to another broker: a kept connection that died with the other broker's
previous process (restarted on the same port) is replaced within the request, not reported."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from odradek.cluster.broker_client import BrokerConnection, BrokerUnreachable
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata
from odradek.cluster.txn_verification import InterBrokerTxnVerifier
from odradek.config.broker import BrokerConfig
from odradek.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from tests.support.fake_broker import FakeBroker, Received


def test_a_connection_kept_from_a_restarted_broker_is_replaced_within_the_request() -> None:
    async def main() -> None:
        fake = await FakeBroker(2).start()

        async def respond(received: Received) -> WriteTxnMarkersResponse:
            return WriteTxnMarkersResponse(markers=[])

        fake.responder = respond
        connection = BrokerConnection(fake.host, fake.port, "test")
        try:
            await connection.request(WriteTxnMarkersRequest(markers=[]), 1)
            port = fake.port
            await fake.stop()  # the broker restarts: its old connections are closed
            fake.port = port
            await fake.start()
            await connection.request(WriteTxnMarkersRequest(markers=[]), 1)
            assert len(fake.received) == 2
            await fake.stop()
            with pytest.raises(BrokerUnreachable):  # gone for good: said so
                await connection.request(WriteTxnMarkersRequest(markers=[]), 1)
        finally:
            connection.close()
            await fake.stop()

    asyncio.run(main())


def test_a_broker_that_does_not_answer_is_given_up_after_request_timeout_ms() -> None:
    """The transaction coordinator's markers and a leader's verification wait request.timeout.ms, as
    Kafka's inter-broker network clients do (it was a fixed 30 s)."""

    async def main() -> None:
        fake = await FakeBroker(2).start()

        async def silent(received: Received) -> WriteTxnMarkersResponse:
            await asyncio.Event().wait()
            raise AssertionError("never answered")

        fake.responder = silent
        config = BrokerConfig({"request.timeout.ms": "300"}, warn_unknown=False)
        verifier = InterBrokerTxnVerifier(config, ClusterMetadata("c", 1, []), 1)
        markers = InterBrokerTxnMarkerSender(config, ClusterMetadata("c", 1, []), 1)
        assert markers.connections.timeout_s == verifier.connections.timeout_s == 0.3
        connection = verifier.connections.to(2, BrokerEndpoint(2, fake.host, fake.port))
        started = time.monotonic()
        try:
            with pytest.raises(BrokerUnreachable):
                await connection.request(WriteTxnMarkersRequest(markers=[]), 1)
            assert time.monotonic() - started < 10
        finally:
            verifier.connections.close()
            await fake.stop()

    asyncio.run(main())


def test_markers_and_verification_connections_take_socket_receive_buffer_bytes() -> None:
    """As Kafka's transaction marker and AddPartitionsToTxn network clients: their SO_RCVBUF is
    socket.receive.buffer.bytes (Linux reports it doubled); -1 leaves the OS default."""

    async def receive_buffer_after_a_request(connection: BrokerConnection) -> int:
        await connection.request(WriteTxnMarkersRequest(markers=[]), 1)
        assert connection._writer is not None
        sock: socket.socket = connection._writer.get_extra_info("socket")
        return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))

    async def main() -> None:
        fake = await FakeBroker(2).start()

        async def respond(received: Received) -> WriteTxnMarkersResponse:
            return WriteTxnMarkersResponse(markers=[])

        fake.responder = respond
        endpoint = BrokerEndpoint(2, fake.host, fake.port)
        config = BrokerConfig({"socket.receive.buffer.bytes": "32768"}, warn_unknown=False)
        markers = InterBrokerTxnMarkerSender(config, ClusterMetadata("c", 1, []), 1)
        verifier = InterBrokerTxnVerifier(config, ClusterMetadata("c", 1, []), 1)
        unset = InterBrokerTxnVerifier(
            BrokerConfig({"socket.receive.buffer.bytes": "-1"}, warn_unknown=False),
            ClusterMetadata("c", 1, []),
            1,
        )
        with socket.socket() as plain:
            os_default = plain.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        try:
            assert await receive_buffer_after_a_request(markers.connections.to(2, endpoint)) == 65536
            assert await receive_buffer_after_a_request(verifier.connections.to(2, endpoint)) == 65536
            assert await receive_buffer_after_a_request(unset.connections.to(2, endpoint)) == os_default
        finally:
            for connections in (markers.connections, verifier.connections, unset.connections):
                connections.close()
            await fake.stop()

    asyncio.run(main())


def test_a_broker_whose_first_address_refuses_is_reached_at_its_next_one() -> None:
    """With socket.receive.buffer.bytes set (its default, 100 KiB) the connection was made to the
    first address the broker's host resolved to and no other: a host whose IPv6 address comes first
    while the broker listens on IPv4 only was never reached, and its transaction markers never
    delivered (asyncio's connect, used before, tries each address in turn; Kafka's clients go on to
    the next address too)."""

    async def main() -> None:
        fake = await FakeBroker(2).start()

        async def respond(received: Received) -> WriteTxnMarkersResponse:
            return WriteTxnMarkersResponse(markers=[])

        fake.responder = respond
        loop = asyncio.get_running_loop()
        refusing = socket.socket()  # bound, never listening: a connection to it is refused
        refusing.bind(("127.0.0.2", 0))
        stream = (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "")

        async def resolve(host: str, port: int, **_: object) -> list[object]:
            assert host == "broker-2.test"
            return [(*stream, refusing.getsockname()), (*stream, (fake.host, fake.port))]

        loop.getaddrinfo = resolve  # type: ignore[method-assign,assignment]
        connection = BrokerConnection("broker-2.test", fake.port, "test", receive_buffer_bytes=100 * 1024)
        try:
            await connection.request(WriteTxnMarkersRequest(markers=[]), 1)
            assert len(fake.received) == 1
        finally:
            connection.close()
            refusing.close()
            await fake.stop()

    asyncio.run(main())
