"""UpdateFeatures (key 57, v0-1): refused feature by feature, as Kafka 3.9 in ZooKeeper mode refuses it.

Version notes:
- v0 and v1 are flexible; v1 adds validate_only and upgrade_type in place of allow_downgrade. Kafka
  3.9 serves 0-1 (v2, which drops the per-feature results, is 4.0's).
- Kafka's ZooKeeper-mode brokers support no feature flag (odradek.cluster.features), so every update
  is INVALID_REQUEST with the reason, validate_only or not; the top-level error is NONE.
- Needs ALTER on the cluster (else a top-level CLUSTER_AUTHORIZATION_FAILED); in a cluster it is the
  controller's to answer, any other broker answers NOT_CONTROLLER and the client looks again, as in
  Kafka.
"""

from __future__ import annotations

from odradek.cluster.features import update_refusal
from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.update_features import (
    UpdatableFeatureResult,
    UpdateFeaturesRequest,
    UpdateFeaturesResponse,
)
from odradek.security.acl import AclOperation


@handles(ApiKey.UPDATE_FEATURES, 0, 1)
async def handle_update_features(
    request: UpdateFeaturesRequest, context: RequestContext
) -> UpdateFeaturesResponse:
    if not authorize_cluster(context, AclOperation.ALTER):
        return _refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if not context.services.controller.is_active:  # a single node's, of a cluster of one, always is
        return _refused(ErrorCode.NOT_CONTROLLER)
    return UpdateFeaturesResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        results=[
            UpdatableFeatureResult(
                feature=update.feature,
                error_code=ErrorCode.INVALID_REQUEST,
                error_message=update_refusal(update.feature),
            )
            for update in request.feature_updates
        ],
    )


def _refused(code: ErrorCode) -> UpdateFeaturesResponse:
    return UpdateFeaturesResponse(throttle_time_ms=0, error_code=code, error_message=None, results=[])
