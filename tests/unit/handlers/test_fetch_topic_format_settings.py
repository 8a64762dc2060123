"""Two topic settings Fetch answers by, as Kafka 3.9's KafkaApis does: a topic whose compression.type is
zstd is UNSUPPORTED_COMPRESSION_TYPE for Fetch before v10 (those clients cannot read zstd), and
message.downconversion.enable=false (topic, or log.message.downconversion.enable on the broker) is
UNSUPPORTED_VERSION for a consumer's Fetch v0-3, which would need batches converted down. The second was
refused before ("refusing those fetches is not built yet")."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import Compression, iter_record_batches
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.fetching import fetch_request, produce

pytestmark = pytest.mark.timeout(30)

TOPIC = "formats"


async def _fetch(broker: HandlerBroker, version: int) -> tuple[ErrorCode, bytes]:
    response = await broker.call(fetch_request({(TOPIC, 0): 0}), version)
    (answer,) = response.responses[0].partitions
    records = answer.records if isinstance(answer.records, bytes) else bytes(answer.records or b"")
    return ErrorCode(answer.error_code), records


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (4, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        (9, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE),
        (10, ErrorCode.NONE),
        (12, ErrorCode.NONE),
    ],
)
async def test_fetch_before_v10_of_a_zstd_topic_is_unsupported_compression_type(
    handler_broker: HandlerBroker, version: int, expected: ErrorCode
) -> None:
    await handler_broker.create_topic(TOPIC, configs={"compression.type": "zstd"})
    await produce(handler_broker, TOPIC, 0, b"a", b"b")
    error, records = await _fetch(handler_broker, version)
    assert error is expected
    if expected is ErrorCode.NONE:
        assert [b.compression for b in iter_record_batches(records)] == [Compression.ZSTD]
    else:
        assert records == b""


async def test_fetch_before_v10_of_a_topic_in_another_codec_is_served(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, configs={"compression.type": "lz4"})
    await produce(handler_broker, TOPIC, 0, b"a")
    error, records = await _fetch(handler_broker, 4)
    assert error is ErrorCode.NONE
    assert [b.compression for b in iter_record_batches(records)] == [Compression.LZ4]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_a_consumer_s_fetch_needing_down_conversion_is_unsupported_version_when_the_topic_disables_it(
    handler_broker: HandlerBroker, version: int
) -> None:
    await handler_broker.create_topic(TOPIC, configs={"message.downconversion.enable": "false"})
    await produce(handler_broker, TOPIC, 0, b"a")
    assert (await _fetch(handler_broker, version))[0] is ErrorCode.UNSUPPORTED_VERSION
    error, records = await _fetch(handler_broker, 4)  # no conversion needed: served
    assert error is ErrorCode.NONE and records


async def test_down_conversion_is_still_served_by_default(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC)
    await produce(handler_broker, TOPIC, 0, b"a")
    error, records = await _fetch(handler_broker, 3)
    assert error is ErrorCode.NONE and records


async def test_the_broker_s_log_message_downconversion_enable_is_the_topics_default(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data", **{"log.message.downconversion.enable": "false"})
    try:
        await broker.create_topic(TOPIC)
        await produce(broker, TOPIC, 0, b"a")
        assert (await _fetch(broker, 2))[0] is ErrorCode.UNSUPPORTED_VERSION
        await broker.create_topic("enabled", configs={"message.downconversion.enable": "true"})
        await produce(broker, "enabled", 0, b"a")
        response = await broker.call(fetch_request({("enabled", 0): 0}), 2)
        assert response.responses[0].partitions[0].error_code == ErrorCode.NONE
    finally:
        broker.close()
