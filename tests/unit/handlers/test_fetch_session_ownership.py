"""A fetch session belongs to the principal that opened it, and its id cannot be guessed from another's:
ids are drawn at random (31 bits, never 0, unique among live sessions), and a session named by another
principal is FETCH_SESSION_ID_NOT_FOUND to it, which can neither read its partitions nor close it."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from odradek.partition import fetch_sessions
from odradek.partition.fetch_sessions import FetchSessionCache
from odradek.protocol.error_codes import ErrorCode
from tests.support.handler_services import HandlerBroker

from .fetching import FETCH_VERSION, answered, fetch_request, produce

pytestmark = pytest.mark.timeout(30)

TOPIC = "private-orders"
P0 = (TOPIC, 0)
OWNER = "User:alice"
OTHER = "User:mallory"


async def _open(broker: HandlerBroker, principal: str) -> int:
    response = await broker.call(fetch_request({P0: 0}, session_epoch=0), FETCH_VERSION, principal=principal)
    assert response.error_code == ErrorCode.NONE and response.session_id > 0
    return int(response.session_id)


async def _incremental(broker: HandlerBroker, session_id: int, epoch: int, principal: str) -> object:
    return await broker.call(
        fetch_request({}, session_id=session_id, session_epoch=epoch), FETCH_VERSION, principal=principal
    )


async def test_fetch_session_ids_were_sequential_so_the_next_one_could_be_guessed(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 1)
    ids = [await _open(handler_broker, OWNER) for _ in range(40)]
    assert all(0 < session_id < 2**31 for session_id in ids)
    assert len(set(ids)) == len(ids)
    # Drawn at random from 2^31-1 values, two successive ids are consecutive with odds of 1 in 2^31.
    assert not any(b - a == 1 for a, b in itertools.pairwise(ids))


def test_a_drawn_session_id_already_live_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = FetchSessionCache(10)
    first = cache.create(1, principal=OWNER)
    assert first is not None
    draws = iter([first.session_id, first.session_id, 7])
    monkeypatch.setattr(fetch_sessions, "_random_session_id", lambda: next(draws))
    second = cache.create(1, principal=OWNER)
    assert second is not None and second.session_id == 7


async def test_another_principal_read_and_closed_a_fetch_session_by_its_id(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 1)
    session_id = await _open(handler_broker, OWNER)
    await produce(handler_broker, TOPIC, 0, b"secret")

    stolen = await _incremental(handler_broker, session_id, 1, OTHER)
    assert stolen.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert stolen.session_id == 0 and stolen.responses == []
    # Epoch -1 (a sessionless fetch closing the session named) and 0 (a new session replacing it):
    # neither closes a session that is not the caller's.
    await handler_broker.call(
        fetch_request({P0: 0}, session_id=session_id, session_epoch=-1), FETCH_VERSION, principal=OTHER
    )
    await handler_broker.call(
        fetch_request({P0: 0}, session_id=session_id, session_epoch=0), FETCH_VERSION, principal=OTHER
    )

    owned = await _incremental(handler_broker, session_id, 1, OWNER)
    assert owned.error_code == ErrorCode.NONE and owned.session_id == session_id
    assert list(answered(owned)) == [P0]
    # Its owner may close it.
    await handler_broker.call(
        fetch_request({P0: 0}, session_id=session_id, session_epoch=-1), FETCH_VERSION, principal=OWNER
    )
    closed = await _incremental(handler_broker, session_id, 2, OWNER)
    assert closed.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


async def test_a_client_claiming_a_replica_id_evicted_a_fresh_consumer_session(tmp_path: Path) -> None:
    """A session was a follower's (privileged: it may evict any consumer's session, however new) on the
    client's word: any client, with no ACL, claimed replica id 1 and took a consumer's place. Beyond
    Kafka 3.9 (which does the same), the privilege needs a follower to exist (cluster mode) and
    CLUSTER_ACTION."""
    broker = HandlerBroker(tmp_path / "data", **{"max.incremental.fetch.session.cache.slots": "1"})
    try:
        await broker.create_topic(TOPIC, 1)
        session_id = await _open(broker, OWNER)
        claim = fetch_request({P0: 0}, session_epoch=0)
        claim.replica_id = 1  # no such broker: this is a single node
        await broker.call(claim, FETCH_VERSION, principal=OTHER)
        again = await _incremental(broker, session_id, 1, OWNER)
        assert again.error_code == ErrorCode.NONE  # type: ignore[attr-defined]
    finally:
        broker.close()
