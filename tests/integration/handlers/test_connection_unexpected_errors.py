"""An unexpected exception that escapes a handler is answered as Kafka's `handleError` answers it:
UNKNOWN_SERVER_ERROR on every topic, partition, group or resource of the request, in the response's
shape, and the connection serves the next request. It is counted in
`odradek_unexpected_errors_total{api=...}` and logged once with its traceback. Before, the connection
was closed unanswered and clients saw a disconnection and retried blind. An acks=0 Produce has no answer
to carry an error: its connection closes, and a failure on purpose there is not counted.

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
from odradek.handlers._common.registry import REGISTRY, Registration
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.join_group import JoinGroupRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from odradek.server.broker import Broker
from tests.support.broker_process import free_port
from tests.support.raw_client import RawClient
from tests.support.unexpected_errors import unexpected_errors

pytestmark = pytest.mark.timeout(60)


UNKNOWN_SERVER_ERROR = ErrorCode.UNKNOWN_SERVER_ERROR.value


class Boom(RuntimeError):
    """The unexpected failure a test plants."""


def _break(monkeypatch: pytest.MonkeyPatch, *apis: ApiKey) -> None:
    async def broken(request: Any, context: Any) -> Any:
        raise Boom("disk on fire")

    for api in apis:
        served = REGISTRY[api]
        monkeypatch.setitem(REGISTRY, api, Registration(api, served.min_version, served.max_version, broken))


def test_an_unexpected_error_escaping_a_handler_is_answered_counted_and_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _break(monkeypatch, ApiKey.METADATA)

    def exchange(port: int) -> None:
        with RawClient(port) as client:
            answer = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 9)
            assert [(t.name, t.error_code) for t in answer.topics] == [("orders", UNKNOWN_SERVER_ERROR)]
            # The same connection serves the next request.
            assert client.request(ApiVersionsRequest(), 0).error_code == 0

    async def scenario() -> None:
        async with _broker(tmp_path) as (port, metrics_port):
            await asyncio.to_thread(exchange, port)
            assert await unexpected_errors(metrics_port) == {"metadata": 1.0}

    with caplog.at_level(logging.ERROR, logger="odradek.connection"):
        asyncio.run(scenario())
    [record] = [r for r in caplog.records if r.name == "odradek.connection" and r.levelno == logging.ERROR]
    assert "METADATA" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], Boom)


def test_unexpected_errors_of_every_api_family_answer_unknown_server_error_per_partition_and_resource(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _break(
        monkeypatch,
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.OFFSET_FETCH,
        ApiKey.FIND_COORDINATOR,
        ApiKey.JOIN_GROUP,
        ApiKey.CREATE_TOPICS,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.INIT_PRODUCER_ID,
    )
    records = RecordBatchBuilder(0)
    records.append(1_700_000_000_000, None, b"value")
    produce = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="orders", partition_data=[PartitionProduceData(index=3, records=records.build())]
            )
        ],
    )
    fetch = FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        topics=[
            FetchTopic(topic="orders", partitions=[FetchPartition(partition=2, partition_max_bytes=1024)])
        ],
    )
    offsets = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id="billing",
                topics=[OffsetFetchRequestTopics(name="orders", partition_indexes=[0, 1])],
            )
        ]
    )

    def exchange(port: int) -> None:
        with RawClient(port) as client:
            answer = client.request(produce, 9)
            [topic] = answer.responses
            assert topic.name == "orders"
            assert [(p.index, p.error_code) for p in topic.partition_responses] == [(3, UNKNOWN_SERVER_ERROR)]

            answer = client.request(fetch, 11)
            assert answer.error_code == UNKNOWN_SERVER_ERROR
            [topic] = answer.responses
            assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
                (2, UNKNOWN_SERVER_ERROR)
            ]

            answer = client.request(offsets, 8)
            [group] = answer.groups
            assert (group.group_id, group.error_code) == ("billing", UNKNOWN_SERVER_ERROR)
            [topic] = group.topics
            assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
                (0, UNKNOWN_SERVER_ERROR),
                (1, UNKNOWN_SERVER_ERROR),
            ]

            answer = client.request(
                FindCoordinatorRequest(key_type=0, coordinator_keys=["billing", "audit"]), 4
            )
            assert [(c.key, c.error_code) for c in answer.coordinators] == [
                ("billing", UNKNOWN_SERVER_ERROR),
                ("audit", UNKNOWN_SERVER_ERROR),
            ]
            answer = client.request(FindCoordinatorRequest(key="billing"), 0)
            assert answer.error_code == UNKNOWN_SERVER_ERROR

            join = JoinGroupRequest(group_id="billing", member_id="m-1", protocol_type="consumer")
            answer = client.request(join, 5)
            assert (answer.error_code, answer.member_id) == (UNKNOWN_SERVER_ERROR, "")

            topics = [
                CreatableTopic(name="a", num_partitions=1, replication_factor=1),
                CreatableTopic(name="b"),
            ]
            answer = client.request(CreateTopicsRequest(topics=topics), 5)
            assert [(t.name, t.error_code) for t in answer.topics] == [
                ("a", UNKNOWN_SERVER_ERROR),
                ("b", UNKNOWN_SERVER_ERROR),
            ]

            resource = DescribeConfigsResource(
                resource_type=2, resource_name="orders", configuration_keys=["x"]
            )
            answer = client.request(DescribeConfigsRequest(resources=[resource]), 4)
            [result] = answer.results
            assert (result.resource_type, result.resource_name, result.error_code, result.configs) == (
                2,
                "orders",
                UNKNOWN_SERVER_ERROR,
                [],
            )

            answer = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1), 4)
            assert (answer.error_code, answer.producer_id) == (UNKNOWN_SERVER_ERROR, -1)

            assert client.request(MetadataRequest(topics=None), 9).brokers  # still served

    async def scenario() -> None:
        async with _broker(tmp_path) as (port, metrics_port):
            await asyncio.to_thread(exchange, port)
            counted = await unexpected_errors(metrics_port)
            assert counted == {
                "produce": 1.0,
                "fetch": 1.0,
                "offset_fetch": 1.0,
                "find_coordinator": 2.0,
                "join_group": 1.0,
                "create_topics": 1.0,
                "describe_configs": 1.0,
                "init_producer_id": 1.0,
            }

    with caplog.at_level(logging.ERROR, logger="odradek.connection"):
        asyncio.run(scenario())
    # each failure logged once, with its traceback (FindCoordinator was asked twice)
    logged = [r for r in caplog.records if r.name == "odradek.connection" and r.levelno >= logging.ERROR]
    assert all(r.exc_info is not None and isinstance(r.exc_info[1], Boom) for r in logged)
    failed = "PRODUCE FETCH OFFSET_FETCH FIND_COORDINATOR FIND_COORDINATOR JOIN_GROUP CREATE_TOPICS "
    failed += "DESCRIBE_CONFIGS INIT_PRODUCER_ID"
    assert sorted(r.getMessage().split()[3] for r in logged) == sorted(failed.split())


def test_confluent_kafka_admin_sees_unknown_server_error_and_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    _break(monkeypatch, ApiKey.CREATE_TOPICS)

    def exchange(port: int) -> None:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
        [future] = admin.create_topics([NewTopic("orders", 1, 1)], request_timeout=10).values()
        with pytest.raises(KafkaException) as failed:
            future.result(timeout=20)
        assert failed.value.args[0].name() == "UNKNOWN"
        assert admin.list_topics(timeout=10).brokers  # the client and broker carry on

    async def scenario() -> None:
        async with _broker(tmp_path) as (port, _metrics_port):
            await asyncio.to_thread(exchange, port)

    asyncio.run(scenario())


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


def test_a_cancelled_error_escaping_a_handler_is_answered_and_the_connection_served_still(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handler awaiting a task it shares with others (a share partition's load, a topic's creation)
    gets CancelledError when that task is cancelled, not the request: it ended the connection's serving
    task as cancelled, which left the connection open, unanswered and never read again (its client
    waited out its request timeout). Answered as any unexpected failure, and the next request served."""

    async def cancelled(request: Any, context: Any) -> Any:
        shared = asyncio.ensure_future(asyncio.sleep(3600))
        asyncio.get_running_loop().call_soon(shared.cancel)
        return await asyncio.shield(shared)

    served = REGISTRY[ApiKey.METADATA]
    monkeypatch.setitem(
        REGISTRY,
        ApiKey.METADATA,
        Registration(ApiKey.METADATA, served.min_version, served.max_version, cancelled),
    )

    def exchange(port: int) -> None:
        with RawClient(port) as client:
            answer = client.request(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 9)
            assert [(t.name, t.error_code) for t in answer.topics] == [("orders", UNKNOWN_SERVER_ERROR)]
            assert client.request(ApiVersionsRequest(), 0).error_code == 0

    async def scenario() -> None:
        async with _broker(tmp_path) as (port, _):
            await asyncio.to_thread(exchange, port)

    asyncio.run(scenario())
