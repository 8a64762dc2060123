"""A single-node broker (no ZooKeeper) is no cluster member: it does not list LeaderAndIsr, StopReplica
or UpdateMetadata in ApiVersions, and a request for one closes the connection, as for any API the broker
does not serve, with nothing changed (a stray controller cannot take its partitions' leadership away)."""

from __future__ import annotations

import pytest

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from odradek.protocol.messages.metadata import MetadataRequest
from tests.support.broker_process import BrokerProcess
from tests.support.controller_requests import Partition, leader_and_isr, stop_replica
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)


def test_api_versions_does_not_list_the_controller_apis(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        response = client.request(
            ApiVersionsRequest(client_software_name="odradek-tests", client_software_version="1.0"), 3
        )
    listed = {entry.api_key for entry in response.api_keys}
    assert ApiKey.METADATA in listed
    assert not listed & {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA}


@pytest.mark.parametrize(
    ("request_body", "version"),
    [
        (leader_and_isr([Partition("anything", 0, leader=7, leader_epoch=99, replicas=[7])]), 7),
        (stop_replica([("anything", 0)], delete=True), 4),
    ],
    ids=["LeaderAndIsr", "StopReplica"],
)
def test_a_controller_request_closes_the_connection(
    shared_broker: BrokerProcess, request_body: object, version: int
) -> None:
    with RawClient(shared_broker.port) as client:
        client.send(request_body, version)  # type: ignore[arg-type]
        assert client.wait_closed()
    with RawClient(shared_broker.port) as client:  # the broker itself carries on
        assert client.request(MetadataRequest(topics=[]), 9).brokers
