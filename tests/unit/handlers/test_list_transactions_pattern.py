"""ListTransactions v2's transactional id pattern (KIP-1152): RE2 syntax matched against whole ids, as
Kafka's RE2/J, off the event loop, and only against the ids the principal may describe (matching the
others first let the match time tell their prefixes, and ran a backtracking engine on them)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest

from odradek.cluster.metadata.acls import LocalAclStore
from odradek.coordinator.client_regex import RegexMatcher
from odradek.coordinator.regex_lane import Requester
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from odradek.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from odradek.security.authorizer import authorizer_from_config
from tests.support.handler_services import HandlerBroker
from tests.support.txn_coordinators import single_node_transactions

pytestmark = pytest.mark.timeout(30)
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ALICE = "User:alice"
IDS = ("alice-payments", "alice-orders", "bob-payments", "bob-orders")


@contextlib.asynccontextmanager
async def transactions(broker: HandlerBroker) -> AsyncIterator[TransactionCoordinator]:
    coordinator = single_node_transactions(broker)
    await coordinator.start()
    broker.services.transactions = coordinator
    try:
        for transactional_id in IDS:
            await coordinator.init_producer_id(transactional_id, 60000, -1, -1)
        yield coordinator
    finally:
        coordinator.stop()


async def listed(broker: HandlerBroker, pattern: str | None, principal: str = "User:ANONYMOUS") -> object:
    request = ListTransactionsRequest(
        state_filters=[], producer_id_filters=[], transactional_id_pattern=pattern
    )
    return await broker.call(request, 2, principal=principal)


async def test_list_transactions_pattern_was_python_syntax_instead_of_kafkas_re2(
    handler_broker: HandlerBroker,
) -> None:
    async with transactions(handler_broker):
        look_ahead = await listed(handler_broker, "(?=alice).*")  # Python's re accepts it, RE2 does not
        assert (look_ahead.error_code, look_ahead.transaction_states) == (
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            [],
        )
        unicode_class = await listed(handler_broker, "\\pL+-payments")  # RE2's, unknown to Python's re
        assert unicode_class.error_code == ErrorCode.NONE
        assert sorted(t.transactional_id for t in unicode_class.transaction_states) == [
            "alice-payments",
            "bob-payments",
        ]
        whole = await listed(handler_broker, "alice")  # a whole-id match, not a search
        assert (whole.error_code, whole.transaction_states) == (ErrorCode.NONE, [])
        everything = await listed(handler_broker, "")  # empty: no filter, as Kafka
        assert sorted(t.transactional_id for t in everything.transaction_states) == sorted(IDS)


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[HandlerBroker]:
    broker = HandlerBroker(tmp_path / "data", **{"authorizer.class.name": AUTHORIZER})
    broker.services.authorizer = authorizer_from_config(broker.config, LocalAclStore(tmp_path / "data"))
    try:
        yield broker
    finally:
        broker.close()


async def test_list_transactions_matched_ids_the_principal_may_not_describe(
    secured: HandlerBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = secured.services
    assert services.authorizer is not None
    await services.authorizer.create_acls(
        [
            AclBinding(
                ResourcePattern(ResourceType.TRANSACTIONAL_ID, "alice-", PatternType.PREFIXED),
                AccessControlEntry(ALICE, "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
            )
        ]
    )
    asked: list[str] = []
    original = RegexMatcher.matching

    async def spy(
        self: RegexMatcher, pattern: str, names: Sequence[str], what: str, requester: Requester
    ) -> list[str]:
        asked.extend(names)
        return await original(self, pattern, names, what, requester)

    monkeypatch.setattr(RegexMatcher, "matching", spy)
    async with transactions(secured):
        response = await listed(secured, ".*payments", principal=ALICE)
    assert [t.transactional_id for t in response.transaction_states] == ["alice-payments"]
    assert sorted(asked) == ["alice-orders", "alice-payments"]


async def test_list_transactions_compiled_the_pattern_for_a_principal_who_may_describe_no_id(
    secured: HandlerBroker,
) -> None:
    """ListTransactions needs no ACL, and its pattern was compiled even when the principal could see no
    transactional id: anyone could make the broker compile. With nothing to match, nothing is compiled
    (so a pattern RE2 would refuse is not reported then; Kafka compiles it first)."""
    async with transactions(secured):
        response = await listed(secured, "(?=x)" + "\\pL" * 5000, principal="User:mallory")
    assert (response.error_code, response.transaction_states) == (ErrorCode.NONE, [])
    assert secured.services.regexes.transactions.pid is None  # no worker was ever asked
