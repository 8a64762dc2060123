"""DescribeClientQuotas (48) and AlterClientQuotas (49) in-process: filters, validation, authorization,
persistence in the log dir."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.cluster.metadata.client_quotas import LocalQuotaStore
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from odradek.protocol.messages.describe_client_quotas import ComponentData, DescribeClientQuotasRequest
from odradek.security.authorizer import authorizer_from_config
from odradek.security.client_quotas import ClientQuotas
from odradek.security.quota_entities import QuotaEntity
from tests.support.handler_services import HandlerBroker

EXACT, DEFAULT_MATCH, SPECIFIED = 0, 1, 2
Entity = list[tuple[str, str | None]]


def _entry(entity: Entity, **ops: float | None) -> EntryData:
    return EntryData(
        entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity],
        ops=[OpData(key=k, value=v or 0.0, remove=v is None) for k, v in ops.items()],
    )


async def _alter(
    broker: HandlerBroker, *entries: EntryData, version: int = 1, validate_only: bool = False
) -> list[tuple[int, str | None]]:
    response = await broker.call(
        AlterClientQuotasRequest(entries=list(entries), validate_only=validate_only), version
    )
    return [(r.error_code, r.error_message) for r in response.entries]


async def _describe(
    broker: HandlerBroker, *components: tuple[str, int, str | None], strict: bool = False, version: int = 1
) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    request = DescribeClientQuotasRequest(
        components=[ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components],
        strict=strict,
    )
    response = await broker.call_over_wire(request, version)
    assert response.error_code == ErrorCode.NONE, response.error_message
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
        for entry in response.entries
    }


async def _with_the_usual_quotas(broker: HandlerBroker) -> None:
    results = await _alter(
        broker,
        _entry([("user", "alice")], producer_byte_rate=1024.0),
        _entry([("user", "alice"), ("client-id", "app")], consumer_byte_rate=2048.0),
        _entry([("user", None)], request_percentage=50.0),
        _entry([("client-id", "app")], producer_byte_rate=4096.0),
        _entry([("client-id", None)], producer_byte_rate=8192.0),
    )
    assert results == [(ErrorCode.NONE, None)] * 5


@pytest.mark.parametrize("version", [0, 1])
async def test_alter_then_describe_everything(handler_broker: HandlerBroker, version: int) -> None:
    await _with_the_usual_quotas(handler_broker)
    assert await _describe(handler_broker, version=version) == {
        (("user", "alice"),): {"producer_byte_rate": 1024.0},
        (("user", "alice"), ("client-id", "app")): {"consumer_byte_rate": 2048.0},
        (("user", None),): {"request_percentage": 50.0},
        (("client-id", "app"),): {"producer_byte_rate": 4096.0},
        (("client-id", None),): {"producer_byte_rate": 8192.0},
    }


async def test_describe_filters_exact_default_specified_and_strict(handler_broker: HandlerBroker) -> None:
    await _with_the_usual_quotas(handler_broker)
    exact_alice = await _describe(handler_broker, ("user", EXACT, "alice"))
    assert set(exact_alice) == {(("user", "alice"),), (("user", "alice"), ("client-id", "app"))}
    strict_alice = await _describe(handler_broker, ("user", EXACT, "alice"), strict=True)
    assert set(strict_alice) == {(("user", "alice"),)}
    default_user = await _describe(handler_broker, ("user", DEFAULT_MATCH, None), strict=True)
    assert set(default_user) == {(("user", None),)}
    any_client = await _describe(handler_broker, ("client-id", SPECIFIED, None))
    assert set(any_client) == {
        (("user", "alice"), ("client-id", "app")),
        (("client-id", "app"),),
        (("client-id", None),),
    }
    both = await _describe(
        handler_broker, ("user", SPECIFIED, None), ("client-id", EXACT, "app"), strict=True
    )
    assert set(both) == {(("user", "alice"), ("client-id", "app"))}


async def test_removing_a_key_and_validate_only(handler_broker: HandlerBroker) -> None:
    await _with_the_usual_quotas(handler_broker)
    assert await _alter(
        handler_broker, _entry([("user", "bob")], producer_byte_rate=5.0), validate_only=True
    ) == [(ErrorCode.NONE, None)]
    assert (("user", "bob"),) not in await _describe(handler_broker)
    await _alter(handler_broker, _entry([("user", "alice")], producer_byte_rate=None))
    assert (("user", "alice"),) not in await _describe(handler_broker)


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        ([("user", "a")], {"producer_byte_rate": -5.0}, "must be a positive value"),
        ([("user", "a")], {"producer_byte_rate": 1.5}, "must be a LONG value"),
        ([("user", "a")], {"no_such_quota": 1.0}, "Invalid configuration key no_such_quota"),
        ([("group", "g")], {"producer_byte_rate": 1.0}, "Unhandled client quota entity type"),
        ([], {"producer_byte_rate": 1.0}, "Invalid empty client quota entity"),
        ([("user", "")], {"producer_byte_rate": 1.0}, "Empty user not supported"),
        ([("ip", "127.0.0.1"), ("user", "a")], {"producer_byte_rate": 1.0}, "IP entity should not be used"),
        ([("ip", "no-such-host.invalid")], {"connection_creation_rate": 1.0}, "not a valid IP"),
        ([("ip", "127.0.0.1")], {"connection_creation_rate": -1.0}, "must be a non-negative value"),
    ],
)
async def test_bad_alterations_are_invalid_request_and_change_nothing(
    handler_broker: HandlerBroker, entity: Entity, ops: dict[str, float], message: str
) -> None:
    # The bad op comes after a good one of the same entity: nothing of the entity is applied.
    ip_only = [kind for kind, _ in entity] == ["ip"]
    good = (
        _entry(entity, connection_creation_rate=10.0) if ip_only else _entry(entity, consumer_byte_rate=10.0)
    )
    bad = _entry(entity, **ops)
    entry = EntryData(entity=good.entity, ops=good.ops + bad.ops)
    [(code, text)] = await _alter(handler_broker, entry)
    assert code == ErrorCode.INVALID_REQUEST
    assert text is not None and message in text
    assert await _describe(handler_broker) == {}


@pytest.mark.parametrize(
    ("components", "code"),
    [
        ([("", EXACT, "x")], ErrorCode.INVALID_REQUEST),
        ([("user", EXACT, "a"), ("user", EXACT, "b")], ErrorCode.INVALID_REQUEST),
        ([("ip", SPECIFIED, None), ("user", SPECIFIED, None)], ErrorCode.INVALID_REQUEST),
        ([("user", 7, None)], ErrorCode.INVALID_REQUEST),
        ([("group", SPECIFIED, None)], ErrorCode.UNSUPPORTED_VERSION),
    ],
)
async def test_bad_filters(
    handler_broker: HandlerBroker, components: list[tuple[str, int, str | None]], code: ErrorCode
) -> None:
    request = DescribeClientQuotasRequest(
        components=[ComponentData(entity_type=t, match_type=m, match=n) for t, m, n in components],
        strict=False,
    )
    response = await handler_broker.call_over_wire(request, 1)
    assert response.error_code == code
    assert response.error_message
    assert response.entries is None


async def test_quotas_are_persisted_in_the_log_dir(handler_broker: HandlerBroker, tmp_path: Path) -> None:
    quotas = ClientQuotas(11, 1, LocalQuotaStore(tmp_path / "data"))
    handler_broker.services.client_quotas = quotas
    await _with_the_usual_quotas(handler_broker)
    reloaded = ClientQuotas(11, 1)
    for entity, values in LocalQuotaStore(tmp_path / "data").load().items():
        reloaded.apply(entity, values)
    assert reloaded.configs.by_entity == quotas.configs.by_entity


async def test_without_the_cluster_permissions_every_answer_is_cluster_authorization_failed(
    tmp_path: Path,
) -> None:
    log_dir = tmp_path / "data"
    broker = HandlerBroker(log_dir, **{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(log_dir))
    try:
        results = await _alter(broker, _entry([("user", "a")], producer_byte_rate=5.0))
        assert [code for code, _ in results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
        response = await broker.call(DescribeClientQuotasRequest(components=[], strict=False), 1)
        assert response.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        assert broker.services.client_quotas.configs.by_entity == {}
    finally:
        broker.close()


async def test_ip_quotas_alter_and_describe(handler_broker: HandlerBroker) -> None:
    await _with_the_usual_quotas(handler_broker)
    results = await _alter(
        handler_broker,
        _entry([("ip", "127.0.0.1")], connection_creation_rate=5.0),
        _entry([("ip", None)], connection_creation_rate=100.0),
    )
    assert results == [(ErrorCode.NONE, None)] * 2
    ips = {
        (("ip", "127.0.0.1"),): {"connection_creation_rate": 5.0},
        (("ip", None),): {"connection_creation_rate": 100.0},
    }
    assert await _describe(handler_broker, ("ip", SPECIFIED, None)) == ips
    assert set(await _describe(handler_broker, ("ip", DEFAULT_MATCH, None))) == {(("ip", None),)}
    assert set(await _describe(handler_broker, ("ip", EXACT, "127.0.0.1"))) == {(("ip", "127.0.0.1"),)}
    # No filter: everything, IPs included; a user filter: no IPs.
    assert ips.items() <= (await _describe(handler_broker)).items()
    assert not any(
        kind == "ip"
        for entity in await _describe(handler_broker, ("user", SPECIFIED, None))
        for kind, _ in entity
    )
    assert handler_broker.services.client_quotas.configs.ip_rate("127.0.0.1") == 5.0


async def test_an_entry_that_cannot_be_stored_fails_alone(handler_broker: HandlerBroker) -> None:
    class BrokenForOneUser(LocalQuotaStore):
        async def write(self, entity: QuotaEntity, values: Mapping[str, float]) -> None:
            if entity.user == "broken":
                raise OSError(5, "Input/output error")
            await super().write(entity, values)

    store = BrokenForOneUser(Path(handler_broker.config.log_dirs[0]))
    handler_broker.services.client_quotas = ClientQuotas(11, 1, store)
    results = await _alter(
        handler_broker,
        _entry([("user", "broken")], producer_byte_rate=5.0),
        _entry([("user", "fine")], producer_byte_rate=5.0),
    )
    assert [code for code, _ in results] == [ErrorCode.UNKNOWN_SERVER_ERROR, ErrorCode.NONE]
    assert set(await _describe(handler_broker)) == {(("user", "fine"),)}
    assert handler_broker.services.unexpected_errors[49] == 1


async def test_two_concurrent_alters_of_one_entity_both_stay(
    handler_broker: HandlerBroker, tmp_path: Path
) -> None:
    """Each AlterClientQuotas entry is applied to the entity's quotas as they are once the change
    before it is stored: one read while another's write was under way replaced that one's key (both
    answered NONE, the first one lost)."""
    handler_broker.services.client_quotas = ClientQuotas(11, 1, LocalQuotaStore(tmp_path / "data"))
    user = [("user", "alice")]
    answers = await asyncio.gather(
        _alter(handler_broker, _entry(user, producer_byte_rate=1024.0)),
        _alter(handler_broker, _entry(user, consumer_byte_rate=2048.0)),
    )
    assert answers == [[(ErrorCode.NONE, None)], [(ErrorCode.NONE, None)]]
    both = {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert await _describe(handler_broker, ("user", EXACT, "alice")) == {(("user", "alice"),): both}
    assert LocalQuotaStore(tmp_path / "data").load() == {QuotaEntity(user="alice"): both}
