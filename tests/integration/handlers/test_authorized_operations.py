"""Cluster authorized operations (KIP-430) without an authorizer are what Kafka grants on the cluster
resource: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
The broker used to add WRITE, which Kafka never grants on the cluster (librdkafka test 0081 expects 7
operations and got 8)."""

from __future__ import annotations

import pytest

from odradek.protocol.messages.describe_cluster import DescribeClusterRequest
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

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
_CODES = {"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8}
_CODES |= {"CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}


def _names(bits: int) -> set[str]:
    return {name for name, code in _CODES.items() if bits & (1 << code)} | (
        {"unknown bits"} if bits & ~sum(1 << code for code in _CODES.values()) else set()
    )


def test_metadata_cluster_authorized_operations_are_kafkas_seven(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        response = client.request(MetadataRequest(topics=[], include_cluster_authorized_operations=True), 8)
    assert _names(response.cluster_authorized_operations) == KAFKA_CLUSTER_OPERATIONS


def test_describe_cluster_authorized_operations_are_kafkas_seven(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        response = client.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 0)
    assert _names(response.cluster_authorized_operations) == KAFKA_CLUSTER_OPERATIONS
