"""DescribeTopicPartitions over the wire of a running broker: `max.request.partition.size.limit` is taken
at start (it used to be refused) and caps every page, and hostile requests (a 64 KiB name, thousands of
names, absurd limits and cursors) are each answered on a connection that keeps serving."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(90)

LIMIT = 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    settings = {"max.request.partition.size.limit": str(LIMIT), "auto.create.topics.enable": "false"}
    process = BrokerProcess(tmp_path_factory.mktemp("dtp") / "data", settings).start()
    try:
        with RawClient(process.port) as client:
            topics = [
                CreatableTopic(
                    name=name, num_partitions=count, replication_factor=1, assignments=[], configs=[]
                )
                for name, count in (("wide", 7), ("narrow", 1))
            ]
            created = client.request(CreateTopicsRequest(topics=topics, timeout_ms=15000), 7)
            assert [t.error_code for t in created.topics] == [ErrorCode.NONE, ErrorCode.NONE]
        yield process
    finally:
        process.stop()


def _describe(client: RawClient, names: list[str], limit: int = 2000, cursor: Cursor | None = None) -> Any:
    request = DescribeTopicPartitionsRequest(
        topics=[TopicRequest(name=name) for name in names], response_partition_limit=limit, cursor=cursor
    )
    return client.request(request, 0)


def test_the_brokers_partition_limit_caps_every_page_whatever_the_client_asks(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port) as client:
        seen: list[tuple[str, int]] = []
        cursor = None
        for _ in range(10):
            response = _describe(client, ["wide", "narrow"], limit=1_000_000, cursor=cursor)
            pages = [(t.name, p.partition_index) for t in response.topics for p in t.partitions]
            assert 0 < len(pages) <= LIMIT
            seen += pages
            cursor = response.next_cursor
            if cursor is None:
                break
        assert seen == [("narrow", 0)] + [("wide", i) for i in range(7)]


def test_hostile_requests_are_answered_and_the_connection_keeps_serving(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        huge = _describe(client, ["a" * 65536, "wide"], limit=-(2**31))
        errors = {t.name[:1]: t.error_code for t in huge.topics}
        assert errors == {"a": ErrorCode.INVALID_TOPIC_EXCEPTION, "w": ErrorCode.NONE}
        many = _describe(client, [f"t{i}" for i in range(5000)] * 2 + ["wide"])
        assert len(many.topics) == 5001
        past = _describe(client, ["wide"], cursor=Cursor(topic_name="wide", partition_index=2**31 - 1))
        assert [(t.name, t.partitions) for t in past.topics] == [("wide", [])]
        negative = _describe(client, ["wide"], cursor=Cursor(topic_name="wide", partition_index=-5))
        assert [t.error_code for t in negative.topics] == [ErrorCode.INVALID_REQUEST]
        versions = client.request(ApiVersionsRequest(), 0)
        assert versions.error_code == ErrorCode.NONE
    assert broker.process is not None and broker.process.poll() is None
