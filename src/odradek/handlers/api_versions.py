"""ApiVersions (key 18): which APIs and versions this broker serves.

Version notes:
- v0-2: the list of (api key, min, max) and, from v1, throttle time.
- v3+: flexible; the request carries the client's software name and version (validated as Kafka does:
  letters, digits, '.', '-' and '_', starting and ending with a letter or digit), and the response may
  carry feature tags. Tagged fields that hold their defaults are left out: Debian's kcat (librdkafka
  2.0.2) mis-skips some of them. The features (odradek.cluster.features): share.version supported at
  0-1 and finalized at 1 while share groups are served (as Kafka 4.4, which finalizes it on a new
  cluster), at epoch 0 as a ZooKeeper-mode Kafka 3.9 broker reports it. A refused request
  (INVALID_REQUEST) lists no APIs, as Kafka's error response.
- v5 (KIP-1242): a client may name the cluster id and node id it means to reach (learned from earlier
  metadata); when it names a cluster id and either differs from this broker's, the answer is
  REBOOTSTRAP_REQUIRED with no APIs, as Kafka 4.4 answers; one of the two without the other is
  INVALID_REQUEST.
- A request newer than v5 is answered by the connection layer with a v0 body holding
  UNSUPPORTED_VERSION and only the ApiVersions entry, so the client can retry with a version we know.
"""

from __future__ import annotations

import re

from odradek.cluster.features import FINALIZED_FEATURES_EPOCH, finalized_features, supported_features
from odradek.cluster.metadata import BrokerMode
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import REGISTRY, handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
)

_SOFTWARE_FIELD = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-_.]*[a-zA-Z0-9])?$")


@handles(ApiKey.API_VERSIONS, 0, 5)
async def handle_api_versions(request: ApiVersionsRequest, context: RequestContext) -> ApiVersionsResponse:
    if not _valid(request, context.api_version):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=[])
    if context.api_version >= 5 and _meant_for_another_broker(request, context):
        return ApiVersionsResponse(error_code=ErrorCode.REBOOTSTRAP_REQUIRED, api_keys=[])
    groups = context.services.groups
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE,
        api_keys=supported_api_versions(context.services.mode),
        supported_features=[
            SupportedFeatureKey(name=name, min_version=low, max_version=high)
            for name, (low, high) in supported_features().items()
        ],
        finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
        finalized_features=[
            FinalizedFeatureKey(name=name, min_version_level=level, max_version_level=level)
            for name, level in finalized_features(groups is not None and groups.share.enabled).items()
        ],
    )


def _valid(request: ApiVersionsRequest, version: int) -> bool:
    if version >= 5 and (request.cluster_id is None) != (request.node_id == -1):
        return False  # the cluster id and the node id come both or neither
    return version < 3 or bool(
        _SOFTWARE_FIELD.match(request.client_software_name)
        and _SOFTWARE_FIELD.match(request.client_software_version)
    )


def _meant_for_another_broker(request: ApiVersionsRequest, context: RequestContext) -> bool:
    if request.cluster_id is None:
        return False
    services = context.services
    return request.cluster_id != services.cluster.cluster_id or request.node_id != services.node_id


def supported_api_versions(mode: BrokerMode = BrokerMode.SINGLE_NODE) -> list[ApiVersion]:
    """What a broker in `mode` serves (the inter-broker control APIs only in a ZooKeeper cluster)."""
    return [
        ApiVersion(api_key=r.api_key, min_version=r.min_version, max_version=r.max_version)
        for r in sorted(REGISTRY.values(), key=lambda r: r.api_key)
        if r.served_in(mode)
    ]


def unsupported_version_response() -> ApiVersionsResponse:
    """The v0 answer to an ApiVersions request newer than we know."""
    entry = REGISTRY[ApiKey.API_VERSIONS]
    return ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=[
            ApiVersion(
                api_key=ApiKey.API_VERSIONS, min_version=entry.min_version, max_version=entry.max_version
            )
        ],
    )
