"""librdkafka (confluent-kafka) against the handlers' answers that its own test suite checks: cluster
authorized operations (test 0081), transactional refusals, per-record produce errors (test 0011)."""

from __future__ import annotations

import pytest
from confluent_kafka import admin

from tests.support.broker_process import BrokerProcess

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
