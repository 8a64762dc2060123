"""A controlled shutdown's attempt is bounded as Kafka's: the connection to the controller by
controller.socket.timeout.ms, its answer by request.timeout.ms (it was a fixed 30 s)."""

from __future__ import annotations

import asyncio
import time

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.config.broker import BrokerConfig
from odradek.server.controlled_shutdown import controlled_shutdown

CONTROLLER = 2


def _config(**settings: str) -> BrokerConfig:
    base = {
        "node.id": "1",
        "controlled.shutdown.max.retries": "1",
        "controlled.shutdown.retry.backoff.ms": "10",
    }
    return BrokerConfig({**base, **settings}, warn_unknown=False)


def _cluster(port: int) -> ClusterMetadata:
    cluster = ClusterMetadata("cluster", CONTROLLER, [])
    endpoint = BrokerEndpoint(CONTROLLER, "127.0.0.1", port)
    cluster.set_live_brokers([LiveBroker(CONTROLLER, {"PLAINTEXT": endpoint})])
    return cluster


async def _shutdown_against_a_silent_controller(config: BrokerConfig) -> tuple[bool, float]:
    async def accept_and_say_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # holds the request unanswered until the broker gives up
        writer.close()

    server = await asyncio.start_server(accept_and_say_nothing, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        started = time.monotonic()
        done = await controlled_shutdown(config, _cluster(port), node_id=1, broker_epoch=7)
        return done, time.monotonic() - started


def test_an_unanswered_controlled_shutdown_gives_up_after_request_timeout_ms() -> None:
    done, took = asyncio.run(_shutdown_against_a_silent_controller(_config(**{"request.timeout.ms": "300"})))
    assert done is False
    assert 0.25 < took < 5, took


def test_each_attempt_waits_request_timeout_ms_for_its_answer() -> None:
    config = _config(**{"request.timeout.ms": "300", "controlled.shutdown.max.retries": "3"})
    done, took = asyncio.run(_shutdown_against_a_silent_controller(config))
    assert done is False
    assert 0.85 < took < 8, took
