"""ApiVersions (key 18): which APIs and versions this broker serves.

Version notes:
- v0-2: the list of (api key, min, max) and, from v1, throttle time.
- v3+: flexible; the request carries the client's software name and version (validated as Kafka does:
  letters, digits, '.', '-' and '_', starting and ending with a letter or digit), and the response may
  carry feature tags. Tagged fields that hold their defaults are left out: Debian's kcat (librdkafka
  2.0.2) mis-skips some of them. No feature is supported or finalized, at epoch 0, as a ZooKeeper-mode
  Kafka 3.9 broker answers (odradek.cluster.features); the epoch is the one tag sent.
- A request newer than v4 is answered by the connection layer with a v0 body holding
  UNSUPPORTED_VERSION and only the ApiVersions entry, so the client can retry with a version we know.
"""

from __future__ import annotations

import re

from odradek.cluster.features import FINALIZED_FEATURES_EPOCH
from odradek.cluster.metadata import BrokerMode
from odradek.handlers.context import RequestContext
from odradek.handlers.registry import REGISTRY, handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse

_SOFTWARE_FIELD = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-_.]*[a-zA-Z0-9])?$")


@handles(ApiKey.API_VERSIONS, 0, 4)
async def handle_api_versions(request: ApiVersionsRequest, context: RequestContext) -> ApiVersionsResponse:
    served = supported_api_versions(context.services.mode)
    if context.api_version >= 3 and not (
        _SOFTWARE_FIELD.match(request.client_software_name)
        and _SOFTWARE_FIELD.match(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=served)
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE, api_keys=served, finalized_features_epoch=FINALIZED_FEATURES_EPOCH
    )


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
