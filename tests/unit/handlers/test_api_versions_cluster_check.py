"""ApiVersions v5 (KIP-1242): a client that names the cluster and node it means to reach is told to
re-bootstrap when it reached another, as Kafka 4.4's broker answers."""

from __future__ import annotations

from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest
from tests.support.handler_services import HandlerBroker

SOFTWARE = {"client_software_name": "apache-kafka-java", "client_software_version": "4.4.0"}


async def test_api_versions_v5_is_served(handler_broker: HandlerBroker) -> None:
    response = await handler_broker.call(ApiVersionsRequest(**SOFTWARE), 5)
    listed = {entry.api_key: entry.max_version for entry in response.api_keys}
    assert response.error_code == ErrorCode.NONE
    assert listed[ApiKey.API_VERSIONS] == 5


async def test_api_versions_v5_for_another_cluster_answers_rebootstrap_required_and_no_apis(
    handler_broker: HandlerBroker,
) -> None:
    node_id = handler_broker.services.node_id
    request = ApiVersionsRequest(**SOFTWARE, cluster_id="another-cluster", node_id=node_id)
    response = await handler_broker.call(request, 5)
    assert response.error_code == ErrorCode.REBOOTSTRAP_REQUIRED
    assert response.api_keys == []


async def test_api_versions_v5_for_another_node_of_this_cluster_answers_rebootstrap_required(
    handler_broker: HandlerBroker,
) -> None:
    cluster_id = handler_broker.services.cluster.cluster_id
    node_id = handler_broker.services.node_id
    request = ApiVersionsRequest(**SOFTWARE, cluster_id=cluster_id, node_id=node_id + 1)
    response = await handler_broker.call(request, 5)
    assert response.error_code == ErrorCode.REBOOTSTRAP_REQUIRED


async def test_api_versions_v5_naming_this_cluster_and_node_is_answered(
    handler_broker: HandlerBroker,
) -> None:
    cluster_id = handler_broker.services.cluster.cluster_id
    node_id = handler_broker.services.node_id
    request = ApiVersionsRequest(**SOFTWARE, cluster_id=cluster_id, node_id=node_id)
    response = await handler_broker.call(request, 5)
    assert response.error_code == ErrorCode.NONE
    assert any(entry.api_key == ApiKey.PRODUCE for entry in response.api_keys)


async def test_api_versions_v5_with_a_node_id_but_no_cluster_id_answers_invalid_request(
    handler_broker: HandlerBroker,
) -> None:
    # Kafka 4.4 wants both or neither
    request = ApiVersionsRequest(**SOFTWARE, cluster_id=None, node_id=handler_broker.services.node_id)
    response = await handler_broker.call(request, 5)
    assert response.error_code == ErrorCode.INVALID_REQUEST
    assert response.api_keys == []


async def test_api_versions_v5_with_a_cluster_id_but_no_node_id_answers_invalid_request(
    handler_broker: HandlerBroker,
) -> None:
    cluster_id = handler_broker.services.cluster.cluster_id
    response = await handler_broker.call(ApiVersionsRequest(**SOFTWARE, cluster_id=cluster_id), 5)
    assert response.error_code == ErrorCode.INVALID_REQUEST


async def test_api_versions_with_an_invalid_software_name_answers_invalid_request_and_no_apis(
    handler_broker: HandlerBroker,
) -> None:
    # Kafka answers a refused ApiVersions with its error response: no API list (3.9 and 4.4 alike)
    request = ApiVersionsRequest(client_software_name="-bad name-", client_software_version="1.0")
    response = await handler_broker.call(request, 3)
    assert response.error_code == ErrorCode.INVALID_REQUEST
    assert response.api_keys == []
