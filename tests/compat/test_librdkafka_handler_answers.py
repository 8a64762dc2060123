"""librdkafka (confluent-kafka) against the handlers' answers that its own test suite checks: cluster
authorized operations (test 0081), transactional refusals, per-record produce errors (test 0011)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Message, Producer, admin

from tests.support.broker_process import BrokerProcess
from tests.support.interop import create_topic

pytestmark = pytest.mark.timeout(60)

KAFKA_CLUSTER_OPERATIONS = {
    "CREATE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
}


def test_librdkafka_describe_cluster_sees_kafkas_seven_operations(interop_broker: BrokerProcess) -> None:
    client = admin.AdminClient({"bootstrap.servers": interop_broker.bootstrap})
    described = client.describe_cluster(include_authorized_operations=True, request_timeout=10).result(15)
    assert {operation.name for operation in described.authorized_operations} == KAFKA_CLUSTER_OPERATIONS


def test_librdkafka_reports_which_records_of_a_refused_batch_had_no_key(
    interop_broker: BrokerProcess,
) -> None:
    """librdkafka test 0011's check: to a compacted topic, the keyless records fail with INVALID_RECORD,
    the others with _INVALID_DIFFERENT_RECORD (refused only for sharing their batch)."""
    topic = "librdkafka-kip467-compacted"
    create_topic(interop_broker.bootstrap, topic, configs={"cleanup.policy": "compact"})
    keyless = {3, 11, 12, 29, 40, 56, 57, 70, 88, 99}
    reports: dict[int, KafkaError | None] = {}
    # One batch of the hundred: flush() sends it; a linger of 1 s let a loaded machine's stall between
    # two produce() calls send the first records alone (all keyed: delivered, and the check failed)
    producer = Producer(
        {"bootstrap.servers": interop_broker.bootstrap, "linger.ms": 60000, "batch.num.messages": 1000}
    )
    for index in range(100):

        def delivered(error: KafkaError | None, message: Message, index: int = index) -> None:
            reports[index] = error

        key = None if index in keyless else b"k%d" % index
        producer.produce(topic, key=key, value=b"v%d" % index, partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0

    assert all(reports[i] is not None for i in range(100))
    failed = {i: error for i, error in reports.items() if error is not None}
    assert {i for i, error in failed.items() if error.code() == KafkaError.INVALID_RECORD} == keyless
    assert {i for i, error in failed.items() if error.code() == KafkaError._INVALID_DIFFERENT_RECORD} == (
        set(range(100)) - keyless
    )
    # (confluent-kafka's delivery errors carry only the code, not librdkafka's per-record message:
    # the raw test in tests/integration/handlers checks the messages.)
