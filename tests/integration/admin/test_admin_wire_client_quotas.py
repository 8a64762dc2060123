"""AlterClientQuotas and DescribeClientQuotas at every version, encoded and decoded by kafka-python's
own protocol classes (generated from Kafka's schemas), against a broker process."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest

from tests.integration.admin.wire import Wire

pytestmark = pytest.mark.timeout(60)

NONE = 0
INVALID_REQUEST = 42
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _alter(wire: Wire, version: int, entity: list[tuple[str, str | None]], **ops: float | None) -> Any:
    entry = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        entries=[
            entry(
                entity=[entry.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[entry.OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()],
            )
        ],
        validate_only=False,
    )
    return wire.send(request, version)


def _describe(
    wire: Wire, version: int, *components: tuple[str, int, str | None], strict: bool = False
) -> Any:
    component = DescribeClientQuotasRequest.ComponentData
    request = DescribeClientQuotasRequest(
        components=[component(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict
    )
    return wire.send(request, version)


@pytest.mark.parametrize("version", [0, 1])
def test_kafka_python_alters_and_describes_client_quotas(wire: Wire, version: int) -> None:
    user = f"user-v{version}"
    answer = _alter(wire, version, [("user", user), ("client-id", None)], producer_byte_rate=1024.0)
    assert [(e.error_code, e.error_message) for e in answer.entries] == [(NONE, None)]
    assert [(e.entity_type, e.entity_name) for e in answer.entries[0].entity] == [
        ("user", user),
        ("client-id", None),
    ]
    described = _describe(wire, version, ("user", EXACT, user), ("client-id", DEFAULT, None), strict=True)
    assert described.error_code == NONE
    [entry] = described.entries
    assert {(e.entity_type, e.entity_name) for e in entry.entity} == {("user", user), ("client-id", None)}
    assert [(v.key, v.value) for v in entry.values] == [("producer_byte_rate", 1024.0)]
    removed = _alter(wire, version, [("user", user), ("client-id", None)], producer_byte_rate=None)
    assert removed.entries[0].error_code == NONE
    assert _describe(wire, version, ("user", EXACT, user)).entries == []


@pytest.mark.parametrize("version", [0, 1])
def test_kafka_python_sees_kafkas_errors(wire: Wire, version: int) -> None:
    bad = _alter(wire, version, [("user", "x")], producer_byte_rate=-1.0)
    assert bad.entries[0].error_code == INVALID_REQUEST
    assert "positive" in bad.entries[0].error_message
    duplicate = _describe(wire, version, ("user", SPECIFIED, None), ("user", SPECIFIED, None))
    assert duplicate.error_code == INVALID_REQUEST
    assert duplicate.entries is None
