"""UpdateFeatures was not served and ApiVersions carried no finalized-features epoch: Kafka's Java admin
client got UnsupportedVersionException from updateFeatures and an empty finalizedFeaturesEpoch from
describeFeatures, where Kafka 3.9 in ZooKeeper mode (whose brokers support no feature flag) finalizes
none at epoch 0 and answers every update INVALID_REQUEST, feature by feature, validateOnly or not.
(tests/compat/java AdminFeaturesTest). Since share groups are served by default, share.version (Kafka
4.x's) is supported at 0-1 and finalized at 1, at the same epoch; it cannot be updated either.
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from odradek.protocol.messages.update_features import (
    FeatureUpdateKey,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient


def test_update_features_is_refused_feature_by_feature_and_no_feature_is_finalized(
    broker: BrokerProcess,
) -> None:
    with RawClient(broker.port, timeout=10) as client:
        versions: ApiVersionsResponse = client.request(
            ApiVersionsRequest(client_software_name="test", client_software_version="1"), 3
        )
        served = {entry.api_key: (entry.min_version, entry.max_version) for entry in versions.api_keys}
        refused: dict[int, UpdateFeaturesResponse] = {}
        for version in (0, 1):
            refused[version] = client.request(
                UpdateFeaturesRequest(
                    timeout_ms=10000,
                    feature_updates=[
                        FeatureUpdateKey(feature="metadata.version", max_version_level=21),
                        FeatureUpdateKey(feature="no.such.feature", max_version_level=1),
                        FeatureUpdateKey(feature="share.version", max_version_level=0),
                    ],
                    validate_only=True,
                ),
                version,
            )
    assert served[57] == (0, 1)
    assert [(f.name, f.min_version, f.max_version) for f in versions.supported_features] == [
        ("share.version", 0, 1)
    ]
    assert [(f.name, f.max_version_level) for f in versions.finalized_features] == [("share.version", 1)]
    assert versions.finalized_features_epoch == 0
    for response in refused.values():
        assert response.error_code == ErrorCode.NONE
        assert {r.feature: r.error_code for r in response.results} == {
            "metadata.version": ErrorCode.INVALID_REQUEST,
            "no.such.feature": ErrorCode.INVALID_REQUEST,
            "share.version": ErrorCode.INVALID_REQUEST,
        }
        assert all(r.error_message for r in response.results)
