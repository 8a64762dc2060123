"""What a Produce costs the event loop per partition (docs/bench/architecture-steps.md, "Per-request CPU,
before #28 and after"): a partition is admitted again before its append only when its record work was
awaited (leadership, the log or the ISR may have moved meanwhile), and its append's completion (a due
fsync, an acks=all wait) is awaited only when something is due."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import odradek.handlers.produce as produce
from odradek.protocol.error_codes import ErrorCode
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import produce_request


def _counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[int]:
    """Count the calls of `owner.name` (still made)."""
    calls: list[int] = []
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


async def _produce(broker: HandlerBroker, topic: str, acks: int = 1) -> ErrorCode:
    request = produce_request(0)
    request.acks = acks
    request.topic_data[0].name = topic
    response = await broker.call(request, 9)
    return ErrorCode(response.responses[0].partition_responses[0].error_code)


@pytest.mark.parametrize(
    ("configs", "acks", "admissions", "completions"),
    [
        ({}, 1, 1, 0),  # no record work, nothing due: admitted once, the append not awaited
        ({}, -1, 1, 0),  # a single node's acks=all: its leader alone in the ISR waits for no one
        ({"compression.type": "gzip"}, 1, 2, 0),  # rewritten in the record workers: admitted again
        ({"flush.messages": "1"}, 1, 1, 1),  # an fsync due: completed (fsynced) before the answer
    ],
)
async def test_a_partition_is_admitted_again_only_after_record_work_and_completed_only_when_due(
    handler_broker: HandlerBroker,
    monkeypatch: pytest.MonkeyPatch,
    configs: dict[str, str | None],
    acks: int,
    admissions: int,
    completions: int,
) -> None:
    await handler_broker.create_topic("orders", configs=configs)
    asked = _counting(monkeypatch, handler_broker.services.leadership, "leader_refusal")
    completed = _counting(monkeypatch, handler_broker.services.replicas, "complete_appends")
    assert await _produce(handler_broker, "orders", acks) is ErrorCode.NONE
    log = handler_broker.log("orders")
    assert (log.log_end_offset, log.recovery_point) == (1, completions)  # fsynced only when due
    assert (len(asked), len(completed)) == (admissions, completions)


async def test_an_answer_without_not_leader_errors_looks_up_no_leader_endpoints(
    handler_broker: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    await handler_broker.create_topic("orders")
    looked_up = _counting(monkeypatch, produce, "leader_endpoints")
    request = produce_request(0)
    request.topic_data[0].name = "orders"
    response = await handler_broker.call(request, 10)  # v10+: the answer names NOT_LEADER's leaders
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert (response.node_endpoints, looked_up) == ([], [])
