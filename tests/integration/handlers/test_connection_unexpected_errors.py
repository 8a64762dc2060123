"""An unexpected exception that escapes a handler closes that connection, and is now counted in
`odradek_unexpected_errors_total{api=...}` as the admin handlers count theirs, and logged naming the
API: before, only a log line without the API said it had happened. A connection closed on purpose
(a failed acks=0 Produce) is not an unexpected error and is not counted.

The broker runs in this process, so that a handler can be made to fail and its log captured.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from odradek.config.broker import BrokerConfig
from odradek.handlers.registry import REGISTRY, Registration
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages.metadata import MetadataRequest
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from odradek.server.broker import Broker
from tests.support.broker_process import free_port
from tests.support.raw_client import RawClient
from tests.support.unexpected_errors import unexpected_errors

pytestmark = pytest.mark.timeout(60)


class Boom(RuntimeError):
    """The unexpected failure a test plants."""


def test_an_unexpected_error_escaping_a_handler_is_counted_and_logged_with_its_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(request: Any, context: Any) -> Any:
        raise Boom("disk on fire")

    served = REGISTRY[ApiKey.METADATA]
    monkeypatch.setitem(
        REGISTRY,
        ApiKey.METADATA,
        Registration(ApiKey.METADATA, served.min_version, served.max_version, broken),
    )

    async def scenario() -> None:
        async with _broker(tmp_path) as (port, metrics_port):
            assert await asyncio.to_thread(_closed_after, port, MetadataRequest(topics=None), 9)
            assert await unexpected_errors(metrics_port) == {"metadata": 1.0}

    with caplog.at_level(logging.ERROR, logger="odradek.connection"):
        asyncio.run(scenario())
    [record] = [r for r in caplog.records if r.name == "odradek.connection" and r.levelno == logging.ERROR]
    assert "METADATA" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], Boom)


def test_a_connection_closed_for_a_failed_acks_zero_produce_is_not_an_unexpected_error(
    tmp_path: Path,
) -> None:
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, b"lost")
    request = ProduceRequest(
        acks=0,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="no-such-topic", partition_data=[PartitionProduceData(index=0, records=builder.build())]
            )
        ],
    )

    async def scenario() -> None:
        async with _broker(tmp_path) as (port, metrics_port):
            assert await asyncio.to_thread(_closed_after, port, request, 9)
            assert await unexpected_errors(metrics_port) == {}

    asyncio.run(scenario())


# ----- helpers ---------------------------------------------------------------------------------------


@asynccontextmanager
async def _broker(tmp_path: Path) -> AsyncIterator[tuple[int, int]]:
    metrics_port = free_port()
    config = BrokerConfig(
        {
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "data"),
            "metrics.port": str(metrics_port),
        },
        warn_unknown=False,
    )
    broker = Broker(config)
    await broker.start()
    try:
        yield broker.bound["PLAINTEXT"][1], metrics_port
    finally:
        await broker.stop()


def _closed_after(port: int, request: Any, version: int) -> bool:
    with RawClient(port) as client:
        client.send(request, version)
        return client.wait_closed()
