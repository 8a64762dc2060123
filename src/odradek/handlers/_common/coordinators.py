"""The coordinators as the API modules reach them: from the request's services, COORDINATOR_NOT_AVAILABLE
before the broker has started them, and their answers shaped for the client's version. Shared by the
group, offset, transaction, FindCoordinator and admin APIs; the coordinators' rules are coordinator/'s."""

from __future__ import annotations

from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.handlers._common.context import RequestContext
from odradek.protocol.error_codes import ErrorCode, KafkaError


def group_coordinator(context: RequestContext) -> GroupCoordinator:
    """The broker's group coordinator; COORDINATOR_NOT_AVAILABLE before it is started."""
    coordinator = getattr(context.services, "groups", None)
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    assert isinstance(coordinator, GroupCoordinator)
    return coordinator


def transaction_coordinator(context: RequestContext) -> TransactionCoordinator:
    """The broker's transaction coordinator; COORDINATOR_NOT_AVAILABLE before it is started."""
    coordinator = context.services.transactions
    if coordinator is None:
        raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return coordinator


def client_host(context: RequestContext) -> str:
    """The client's host as Kafka's coordinators report it ("/<address>")."""
    return f"/{context.client_host}"


def for_version(error: ErrorCode, api_version: int, fenced_since: int) -> ErrorCode:
    """PRODUCER_FENCED as the client's version knows it."""
    if error is ErrorCode.PRODUCER_FENCED and api_version < fenced_since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error
