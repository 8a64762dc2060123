"""Controlled shutdown: before stopping, a cluster member asks the controller to move its leaderships.

As Kafka's KafkaServer.controlledShutdown: ControlledShutdown v3 (with the broker epoch) to the
controller's inter-broker endpoint, as the metadata cache knows it (with the inter-broker listener's TLS
and SASL); an attempt fails when no
controller is known, the connection fails, the controller answers an error, or partitions remain
led here. After a failed attempt the broker waits controlled.shutdown.retry.backoff.ms and asks again
(the controller may have moved), at most controlled.shutdown.max.retries times; then it stops anyway.
As Kafka, connecting to the controller is bounded by controller.socket.timeout.ms and its answer by
request.timeout.ms.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from odradek.cluster.inter_broker_connection import (
    PLAINTEXT,
    InterBrokerSecurity,
    open_inter_broker_connection,
    round_trip,
)
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.controlled_shutdown import ControlledShutdownRequest

log = logging.getLogger("odradek.broker")

VERSION = 3


async def controlled_shutdown(
    config: BrokerConfig,
    cluster: ClusterMetadata,
    node_id: int,
    broker_epoch: int,
    security: InterBrokerSecurity = PLAINTEXT,
) -> bool:
    """Ask the controller until it has moved every leadership; True when it did."""
    listener = config.inter_broker_listener_name or config.security_inter_broker_protocol
    attempts = max(config.controlled_shutdown_max_retries, 1)
    for attempt in range(1, attempts + 1):
        outcome = await _attempt(config, cluster, listener, node_id, broker_epoch, security)
        if outcome is None:
            log.info("controlled shutdown of broker %d succeeded", node_id)
            return True
        log.warning(
            "controlled shutdown of broker %d, attempt %d of %d: %s", node_id, attempt, attempts, outcome
        )
        if attempt < attempts:
            await asyncio.sleep(config.controlled_shutdown_retry_backoff_ms / 1000)
    log.warning("controlled shutdown of broker %d did not complete: shutting down anyway", node_id)
    return False


async def _attempt(
    config: BrokerConfig,
    cluster: ClusterMetadata,
    listener: str,
    node_id: int,
    broker_epoch: int,
    security: InterBrokerSecurity,
) -> str | None:
    """None when the controller moved everything, else why this attempt failed."""
    controller = cluster.live_brokers.get(cluster.controller_id)
    endpoint = controller.endpoints.get(listener) if controller is not None else None
    if endpoint is None:
        return f"no controller known on listener {listener} (controller id {cluster.controller_id})"
    request = ControlledShutdownRequest(broker_id=node_id, broker_epoch=broker_epoch)
    client_id = f"broker-{node_id}-controlled-shutdown"
    where = f"controller {cluster.controller_id} at {endpoint.host}:{endpoint.port}"
    try:
        reader, writer = await asyncio.wait_for(
            open_inter_broker_connection(endpoint.host, endpoint.port, security, client_id),
            config.controller_socket_timeout_ms / 1000,
        )
    except (OSError, TimeoutError) as error:
        return f"{where} unreachable ({error or 'controller.socket.timeout.ms passed'})"
    try:
        response: Any = await asyncio.wait_for(
            round_trip(reader, writer, request, VERSION, 1, client_id), config.request_timeout_ms / 1000
        )
    except TimeoutError:
        return f"{where} did not answer within request.timeout.ms ({config.request_timeout_ms} ms)"
    except (OSError, asyncio.IncompleteReadError, CodecError) as error:
        return f"{where} unreachable ({error})"
    finally:
        writer.close()
    if response.error_code != ErrorCode.NONE:
        return f"controller {cluster.controller_id} answered {ErrorCode(response.error_code).name}"
    if response.remaining_partitions:
        remaining = ", ".join(f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions)
        return f"partitions still led here: {remaining}"
    return None
