"""A file operation that fails under an admin request answers KAFKA_STORAGE_ERROR without the operating
system's text (the broker's paths, errno): that goes to the broker's log. Kafka answers storage failures
with the code alone (ReplicaManager: no custom message for a KafkaStorageException). Issue #25, "What
the authorizer should hide"."""

from __future__ import annotations

import errno
import logging

import pytest

from odradek.handlers.configs import ResourceType
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from odradek.protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.errors import LogStorageError
from odradek.storage.log import Log
from odradek.storage.partition_creation import PartitionCreationJob
from tests.support.handler_services import HandlerBroker

#: Where the broker keeps its data: nothing a client may learn.
SECRET_PATH = "/srv/odradek-data-7f3a/orders-0"


def _disk_full(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device", SECRET_PATH)


def _reasons_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if SECRET_PATH in r.getMessage()]


async def test_topic_changes_failing_on_disk_answer_the_code_without_the_path(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Before: "creating partitions of orders failed: [Errno 28] No space left on device:
    '/srv/...'" went to the client as the error message of each of these."""
    await handler_broker.create_topic("orders")
    monkeypatch.setattr(PartitionCreationJob, "run", _disk_full)
    monkeypatch.setattr(handler_broker.logs.topic_store, "save_topic", _disk_full)
    monkeypatch.setattr(handler_broker.logs.deletions, "mark_topic_deleted", _disk_full)
    storage_error = (ErrorCode.KAFKA_STORAGE_ERROR, None)

    new = CreatableTopic(name="payments", num_partitions=1, replication_factor=1, assignments=[], configs=[])
    created = await handler_broker.call(
        CreateTopicsRequest(topics=[new], timeout_ms=1000, validate_only=False), 7
    )
    assert [(t.error_code, t.error_message) for t in created.topics] == [storage_error]

    grown = await handler_broker.call(
        CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name="orders", count=2, assignments=None)],
            timeout_ms=1000,
            validate_only=False,
        ),
        3,
    )
    assert [(r.error_code, r.error_message) for r in grown.results] == [storage_error]

    retention = AlterableConfig(name="retention.ms", value="1000")
    altered = await handler_broker.call(
        AlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=ResourceType.TOPIC, resource_name="orders", configs=[retention]
                )
            ],
            validate_only=False,
        ),
        2,
    )
    assert [(r.error_code, r.error_message) for r in altered.responses] == [storage_error]

    deleted = await handler_broker.call(DeleteTopicsRequest(topic_names=["orders"], timeout_ms=1000), 5)
    assert [(r.error_code, r.error_message) for r in deleted.responses] == [storage_error]

    # the operator still learns what failed and where, once per failure
    assert len(_reasons_logged(caplog)) == 4
    assert all(r.levelno == logging.ERROR for r in caplog.records if SECRET_PATH in r.getMessage())


async def test_a_produce_failing_on_disk_answers_the_code_without_the_path(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """As Kafka's ReplicaManager (no custom message for a KafkaStorageException); before, the storage
    error's text was the partition's error_message and nothing was logged."""
    await handler_broker.create_topic("orders")

    def failing_append(*args: object, **kwargs: object) -> None:
        raise LogStorageError(f"cannot write {SECRET_PATH}/00000000000000000000.log")

    monkeypatch.setattr(Log, "append", failing_append)
    builder = RecordBatchBuilder(0)
    builder.append(1_700_000_000_000, None, b"v")
    data = PartitionProduceData(index=0, records=builder.build())
    request = ProduceRequest(
        acks=1, timeout_ms=1000, topic_data=[TopicProduceData(name="orders", partition_data=[data])]
    )
    response = await handler_broker.call(request, 9)
    answer = response.responses[0].partition_responses[0]
    assert (answer.error_code, answer.error_message) == (ErrorCode.KAFKA_STORAGE_ERROR, None)
    assert len(_reasons_logged(caplog)) == 1
