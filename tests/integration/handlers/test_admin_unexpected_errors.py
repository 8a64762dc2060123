"""An unexpected exception while one resource of an admin request is handled (a bug, a failing disk)
still answers that resource alone with UNKNOWN_SERVER_ERROR, but is now logged with its traceback and
counted in `odradek_unexpected_errors_total{api=...}`: before, the topic and config handlers turned it
into the bare error code and nothing said what had happened. DeleteTopics, which let it escape (the
connection was closed and the other topics went unanswered), now answers it per topic too.

The broker runs in this process, so that a service can be made to fail and its log captured.
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
from odradek.handlers import configs
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.server.broker import Broker
from tests.support.broker_process import free_port
from tests.support.raw_client import RawClient
from tests.support.unexpected_errors import unexpected_errors

pytestmark = pytest.mark.timeout(60)

TOPIC_RESOURCE = 2


class Boom(RuntimeError):
    """The unexpected failure a test plants."""


def test_create_topics_logs_and_counts_an_unexpected_error_and_answers_the_other_topics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with _broker(tmp_path) as (broker, metrics_port):
            real_create = broker.services.topics.create_topic

            async def create_topic(name: str, *args: Any, **kwargs: Any) -> Any:
                if name == "broken":
                    raise Boom("disk on fire")
                return await real_create(name, *args, **kwargs)

            monkeypatch.setattr(broker.services.topics, "create_topic", create_topic)
            request = CreateTopicsRequest(
                topics=[
                    CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in ("broken", "fine")
                ],
                timeout_ms=10_000,
            )
            response = await _request(broker, request, 5)
            assert [(t.name, t.error_code) for t in response.topics] == [
                ("broken", ErrorCode.UNKNOWN_SERVER_ERROR),
                ("fine", ErrorCode.NONE),
            ]
            assert await unexpected_errors(metrics_port) == {"create_topics": 1.0}

    with caplog.at_level(logging.ERROR, logger="odradek.handlers"):
        asyncio.run(scenario())
    _assert_logged_with_traceback(caplog, "CREATE_TOPICS", "topic 'broken'")


def test_describe_configs_logs_and_counts_an_unexpected_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real_describe = configs._describe

    def describe(resource: DescribeConfigsResource, *args: Any) -> Any:
        if resource.resource_name == "broken":
            raise Boom("disk on fire")
        return real_describe(resource, *args)

    monkeypatch.setattr(configs, "_describe", describe)

    async def scenario() -> None:
        async with _broker(tmp_path) as (broker, metrics_port):
            request = DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(
                        resource_type=TOPIC_RESOURCE, resource_name="broken", configuration_keys=None
                    ),
                    DescribeConfigsResource(resource_type=4, resource_name="1", configuration_keys=None),
                ]
            )
            response = await _request(broker, request, 4)
            assert [r.error_code for r in response.results] == [
                ErrorCode.UNKNOWN_SERVER_ERROR,
                ErrorCode.NONE,
            ]
            assert await unexpected_errors(metrics_port) == {"describe_configs": 1.0}

    with caplog.at_level(logging.ERROR, logger="odradek.handlers"):
        asyncio.run(scenario())
    _assert_logged_with_traceback(caplog, "DESCRIBE_CONFIGS", "TOPIC 'broken'")


def test_delete_topics_answers_an_unexpected_error_per_topic_instead_of_closing_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> None:
        async with _broker(tmp_path) as (broker, metrics_port):
            create = CreateTopicsRequest(
                topics=[
                    CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in ("broken", "fine")
                ],
                timeout_ms=10_000,
            )
            assert {t.error_code for t in (await _request(broker, create, 5)).topics} == {ErrorCode.NONE}
            real_delete = broker.services.topics.delete_topic

            async def delete_topic(name: str, *args: Any, **kwargs: Any) -> Any:
                if name == "broken":
                    raise Boom("disk on fire")
                return await real_delete(name, *args, **kwargs)

            monkeypatch.setattr(broker.services.topics, "delete_topic", delete_topic)
            response = await _request(
                broker, DeleteTopicsRequest(topic_names=["broken", "fine"], timeout_ms=10_000), 5
            )
            assert [(r.name, r.error_code) for r in response.responses] == [
                ("broken", ErrorCode.UNKNOWN_SERVER_ERROR),
                ("fine", ErrorCode.NONE),
            ]
            assert await unexpected_errors(metrics_port) == {"delete_topics": 1.0}

    with caplog.at_level(logging.ERROR, logger="odradek.handlers"):
        asyncio.run(scenario())
    _assert_logged_with_traceback(caplog, "DELETE_TOPICS", "topic 'broken'")


# ----- helpers ---------------------------------------------------------------------------------------


@asynccontextmanager
async def _broker(tmp_path: Path) -> AsyncIterator[tuple[Any, int]]:
    metrics_port = free_port()
    config = BrokerConfig(
        {
            "node.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path / "data"),
            "num.partitions": "1",
            "metrics.port": str(metrics_port),
        },
        warn_unknown=False,
    )
    broker = Broker(config)
    await broker.start()
    try:
        yield broker, metrics_port
    finally:
        await broker.stop()


async def _request(broker: Broker, request: Any, version: int) -> Any:
    port = broker.bound["PLAINTEXT"][1]

    def call() -> Any:
        with RawClient(port) as client:
            return client.request(request, version)

    return await asyncio.to_thread(call)


def _assert_logged_with_traceback(caplog: pytest.LogCaptureFixture, api: str, resource: str) -> None:
    matching: list[logging.LogRecord] = [
        r for r in caplog.records if r.name == "odradek.handlers" and r.levelno == logging.ERROR
    ]
    assert len(matching) == 1, [r.getMessage() for r in caplog.records]
    [record] = matching
    assert api in record.getMessage() and resource in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], Boom)
    assert "disk on fire" in caplog.text and "Traceback" in caplog.text
