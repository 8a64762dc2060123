"""GetTelemetrySubscriptions (key 71) and PushTelemetry (key 72): client telemetry (KIP-714).

Version notes:
- v0 of both, flexible. The client asks for its subscription with the zero instance id and is given
  an id; it then pushes OTLP metrics at the interval it was given (telemetry/manager.py has Kafka's
  rules: throttling, subscription ids, codecs, telemetry.max.bytes).
- Kafka serves these only in KRaft mode and advertises them only when a ClientTelemetry receiver plugin
  is configured; odradek is its own receiver (the pushed metrics are served on metrics.port and shown
  in the console), so it serves them in both its modes, always.
- No authorization, as Kafka: any connection may push its own telemetry.
- client_software_name/version are what the connection's accepted ApiVersions v3+ named, as Kafka's
  ClientInformation; a connection that named none is not matched by patterns on them.
"""

from __future__ import annotations

import asyncio
import uuid

from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages.get_telemetry_subscriptions import (
    GetTelemetrySubscriptionsRequest,
    GetTelemetrySubscriptionsResponse,
)
from odradek.protocol.messages.push_telemetry import PushTelemetryRequest, PushTelemetryResponse
from odradek.security.client_quotas import now_ms
from odradek.telemetry.manager import Push
from odradek.telemetry.subscriptions import ClientAttributes


@handles(ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0)
async def handle_get_telemetry_subscriptions(
    request: GetTelemetrySubscriptionsRequest, context: RequestContext
) -> GetTelemetrySubscriptionsResponse:
    try:
        answer = context.services.client_metrics.get_subscriptions(
            request.client_instance_id, _client(context), now_ms(), connection_id=context.connection_id
        )
    except KafkaError as error:
        return GetTelemetrySubscriptionsResponse(
            error_code=error.error_code, client_instance_id=uuid.UUID(int=0)
        )
    return GetTelemetrySubscriptionsResponse(
        error_code=ErrorCode.NONE,
        client_instance_id=answer.client_instance_id,
        subscription_id=answer.subscription_id,
        accepted_compression_types=answer.accepted_compression_types,
        push_interval_ms=answer.push_interval_ms,
        telemetry_max_bytes=answer.telemetry_max_bytes,
        # cumulative sums: the endpoint serves them as Prometheus does (Kafka asks for deltas)
        delta_temporality=False,
        requested_metrics=answer.requested_metrics,
    )


@handles(ApiKey.PUSH_TELEMETRY, 0, 0)
async def handle_push_telemetry(
    request: PushTelemetryRequest, context: RequestContext
) -> PushTelemetryResponse:
    push = Push(
        request.client_instance_id,
        request.subscription_id,
        request.terminating,
        request.compression_type,
        request.metrics or b"",
    )
    manager = context.services.client_metrics
    try:
        manager.accept(push, _client(context), now_ms(), connection_id=context.connection_id)
        if push.metrics:
            # inflating and parsing up to telemetry.max.bytes is not done on the event loop
            try:
                points = await asyncio.to_thread(manager.decode, push)
            except KafkaError as error:
                manager.refused(push.client_instance_id, error)
                raise
            manager.keep(push.client_instance_id, points)
    except KafkaError as error:
        return PushTelemetryResponse(error_code=error.error_code)
    return PushTelemetryResponse(error_code=ErrorCode.NONE)


def _client(context: RequestContext) -> ClientAttributes:
    software, version = context.client_software or (None, None)
    return ClientAttributes(
        client_instance_id=None,  # the manager sets it
        client_id=context.client_id,
        client_software_name=software,
        client_software_version=version,
        client_source_address=context.client_host,
        client_source_port=context.client_port,
    )
