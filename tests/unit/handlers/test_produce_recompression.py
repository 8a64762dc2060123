"""Produce to a topic whose compression.type names a codec: batches in another codec are stored in the
topic's, rewritten in a worker thread so that compressing (seconds for a large batch at a high zstd
level) does not hold every other connection; old producers' message sets too."""

from __future__ import annotations

import threading

import pytest

from odradek.handlers._common.config_alteration import reconfigure
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import (
    Compression,
    Record,
    RecordBatchBuilder,
    build_message_set,
    iter_record_batches,
)
from odradek.storage import prepared_appends
from odradek.storage.fetch import FetchIsolation
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)

TOPIC = "recompressed"


def _batch(*values: bytes, compression: Compression) -> bytes:
    builder = RecordBatchBuilder(0, compression=compression)
    for value in values:
        builder.append(1_700_000_000_000, b"k", value)
    return builder.build()


def _produce(records: bytes, partition: int = 0) -> ProduceRequest:
    return ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=partition, records=records)]
            )
        ],
    )


def _stored(broker: HandlerBroker, partition: int = 0) -> list[tuple[Compression, list[bytes | None]]]:
    data = broker.log(TOPIC, partition).read(0, 1 << 20, isolation=FetchIsolation.LOG_END).read_bytes()
    return [(b.compression, [r.value for r in b.records]) for b in iter_record_batches(data)]


async def test_a_v3_producer_s_gzip_batch_is_stored_in_the_zstd_topic_s_codec(
    handler_broker: HandlerBroker,
) -> None:
    # Produce v3-6 may not carry zstd themselves; the topic's codec is the broker's business (Kafka too).
    await handler_broker.create_topic(TOPIC, configs={"compression.type": "zstd"})
    response = await handler_broker.call(_produce(_batch(b"a", b"b", compression=Compression.GZIP)), 3)
    (answer,) = response.responses[0].partition_responses
    assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 0)
    assert _stored(handler_broker) == [(Compression.ZSTD, [b"a", b"b"])]


async def test_batches_are_recompressed_by_the_record_workers_not_on_the_event_loop(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    await handler_broker.create_topic(TOPIC, partitions=2, configs={"compression.type": "lz4"})
    threads: list[threading.Thread] = []
    real = prepared_appends.rebuild_batch

    def spy(*args: object, **kwargs: object) -> bytearray:
        threads.append(threading.current_thread())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(prepared_appends, "rebuild_batch", spy)
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name=TOPIC,
                partition_data=[
                    PartitionProduceData(index=0, records=_batch(b"a", compression=Compression.SNAPPY)),
                    PartitionProduceData(index=1, records=_batch(b"b", compression=Compression.NONE)),
                ],
            )
        ],
    )
    response = await handler_broker.call(request, 9)
    assert [p.error_code for p in response.responses[0].partition_responses] == [ErrorCode.NONE] * 2
    # the record workers' own threads: not the loop's, nor those flushes and ZooKeeper calls use
    assert len(threads) == 2 and all(t.name.startswith("odradek-records") for t in threads)
    assert _stored(handler_broker, 0) == [(Compression.LZ4, [b"a"])]
    assert _stored(handler_broker, 1) == [(Compression.LZ4, [b"b"])]


async def test_a_batch_already_in_the_topic_s_codec_goes_to_no_thread(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    await handler_broker.create_topic(TOPIC, configs={"compression.type": "snappy"})

    def never(*_: object) -> None:
        raise AssertionError("nothing needed a worker thread")

    monkeypatch.setattr(handler_broker.services.record_workers, "submit", never)
    response = await handler_broker.call(_produce(_batch(b"a", compression=Compression.SNAPPY)), 9)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert _stored(handler_broker) == [(Compression.SNAPPY, [b"a"])]


async def test_an_old_producer_s_message_set_is_stored_in_the_topic_s_codec(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, configs={"compression.type": "snappy"})
    records = [Record(0, 1_700_000_000_000, b"k", b"old"), Record(1, 1_700_000_000_000, b"k", b"er")]
    response = await handler_broker.call(
        _produce(build_message_set(records, magic=1, compression=Compression.GZIP)), 2
    )
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert _stored(handler_broker) == [(Compression.SNAPPY, [b"old", b"er"])]


async def test_a_batch_too_large_once_uncompressed_is_message_too_large(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(
        TOPIC, configs={"compression.type": "uncompressed", "max.message.bytes": "2000"}
    )
    response = await handler_broker.call(_produce(_batch(bytes(10_000), compression=Compression.ZSTD)), 9)
    (answer,) = response.responses[0].partition_responses
    assert answer.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert "max.message.bytes" in (answer.error_message or "")
    assert handler_broker.log(TOPIC).log_end_offset == 0


async def test_the_broker_s_compression_type_changed_at_run_time_applies_to_existing_topics(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, partitions=2)
    await handler_broker.create_topic("own", configs={"compression.type": "producer"})
    reconfigure(handler_broker.services, handler_broker.config.with_dynamic({}, {"compression.type": "gzip"}))
    response = await handler_broker.call(_produce(_batch(b"a", compression=Compression.LZ4)), 9)
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert _stored(handler_broker) == [(Compression.GZIP, [b"a"])]
    own = handler_broker.log("own")
    own.append(bytearray(_batch(b"b", compression=Compression.LZ4)))
    data = own.read(0, 1 << 20, isolation=FetchIsolation.LOG_END).read_bytes()
    assert [b.compression for b in iter_record_batches(data)] == [Compression.LZ4]
