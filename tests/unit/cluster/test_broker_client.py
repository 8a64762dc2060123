"""A broker's own connection to another broker: a kept connection that died with the other broker's
previous process (restarted on the same port) is replaced within the request, not reported."""

from __future__ import annotations

import asyncio

import pytest

from odradek.cluster.broker_client import BrokerConnection, BrokerUnreachable
from odradek.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse
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
