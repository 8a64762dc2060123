"""The controller's channel to a broker honours Kafka's two timeouts (ControllerChannelManager):
request.timeout.ms for an answer, after which the request is sent again on a new connection, and
controller.socket.timeout.ms for a connection; both were a fixed 30 s."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.cluster.controller import requests
from odradek.cluster.controller.channel import ControllerChannelManager
from odradek.protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse
from tests.support.fake_broker import FakeBroker, Received


def test_a_request_a_broker_does_not_answer_within_request_timeout_ms_is_sent_again() -> None:
    async def main() -> None:
        answered = asyncio.Event()

        async def silent_once(received: Received) -> Any:
            if len(fake.received) == 1:
                await asyncio.Event().wait()  # the first one is never answered
            answered.set()
            return StopReplicaResponse(error_code=0, partition_errors=[])

        fake = await FakeBroker(7, responder=silent_once).start()
        channel = ControllerChannelManager(1, request_timeout_s=0.3, connect_timeout_s=0.3)
        channel.add_broker(7, fake.host, fake.port)
        try:
            channel.send(
                7, requests.BrokerRequest(StopReplicaRequest(controller_id=1, controller_epoch=3), 4)
            )
            await asyncio.wait_for(answered.wait(), 20)  # the default would wait 30 s before resending
            assert [r.body.controller_epoch for r in fake.received] == [3, 3]
        finally:
            await channel.close()
            await fake.stop()

    asyncio.run(main())
