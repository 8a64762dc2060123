"""Fetch at isolation level 1 (read_committed): bounded by the last stable offset, lists aborted transactions.

Transactional batches and markers are appended straight to the partition's log (the transaction
coordinator's own path is tested in tests/integration/transactions), then fetched through the Fetch handler.
"""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import PartitionData
from tests.support.handler_services import HandlerBroker

from .fetching import (
    FETCH_VERSION,
    answered,
    append_transactional,
    consumed,
    end_transaction,
    fetch_request,
    produce,
)

pytestmark = pytest.mark.timeout(30)

TOPIC = "transactions"
P0 = (TOPIC, 0)
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


async def fetch(
    broker: HandlerBroker, offset: int, isolation_level: int, version: int = FETCH_VERSION
) -> PartitionData:
    response = await broker.call(fetch_request({P0: offset}, isolation_level=isolation_level), version)
    assert response.error_code == ErrorCode.NONE
    data = answered(response)[P0]
    assert data.error_code == ErrorCode.NONE
    return data


async def test_read_committed_stops_at_the_first_open_transaction(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC)
    await produce(handler_broker, TOPIC, 0, b"before-1", b"before-2")  # 0-1
    append_transactional(handler_broker, TOPIC, 0, 7, 0, b"open-1", b"open-2")  # 2-3, not ended
    await produce(handler_broker, TOPIC, 0, b"after")  # 4
    uncommitted = await fetch(handler_broker, 0, READ_UNCOMMITTED)
    committed = await fetch(handler_broker, 0, READ_COMMITTED)
    for data in (uncommitted, committed):
        assert (data.high_watermark, data.last_stable_offset) == (5, 2)
    assert [v for _, v in consumed(uncommitted)] == [b"before-1", b"before-2", b"open-1", b"open-2", b"after"]
    assert consumed(committed) == [(0, b"before-1"), (1, b"before-2")]
    assert committed.aborted_transactions == []
    assert uncommitted.aborted_transactions is None  # null unless read_committed, as Kafka answers
    # At the last stable offset a read_committed fetch has nothing yet, and no error.
    assert consumed(await fetch(handler_broker, 2, READ_COMMITTED)) == []


async def test_commit_marker_moves_the_last_stable_offset_to_the_high_watermark(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC)
    append_transactional(handler_broker, TOPIC, 0, 7, 0, b"t-1", b"t-2")  # 0-1
    await produce(handler_broker, TOPIC, 0, b"plain")  # 2
    end_transaction(handler_broker, TOPIC, 0, 7, commit=True)  # 3
    committed = await fetch(handler_broker, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (4, 4)
    assert consumed(committed) == [(0, b"t-1"), (1, b"t-2"), (2, b"plain")]
    assert committed.aborted_transactions == []


async def test_read_committed_lists_the_aborted_transactions_the_fetch_overlaps(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC)
    append_transactional(handler_broker, TOPIC, 0, 7, 0, b"aborted-1", b"aborted-2")  # 0-1
    append_transactional(handler_broker, TOPIC, 0, 8, 0, b"committed")  # 2
    end_transaction(handler_broker, TOPIC, 0, 7, commit=False)  # 3
    end_transaction(handler_broker, TOPIC, 0, 8, commit=True)  # 4
    append_transactional(handler_broker, TOPIC, 0, 9, 0, b"aborted-later")  # 5
    end_transaction(handler_broker, TOPIC, 0, 9, commit=False)  # 6
    from_start = await fetch(handler_broker, 0, READ_COMMITTED)
    assert from_start.last_stable_offset == 7
    listed = [(a.producer_id, a.first_offset) for a in from_start.aborted_transactions or []]
    assert listed == [(7, 0), (9, 5)]
    assert consumed(from_start) == [(2, b"committed")]  # what a read_committed consumer shows
    # From past producer 7's abort marker only producer 9's transaction overlaps the fetch.
    from_four = await fetch(handler_broker, 4, READ_COMMITTED)
    assert [(a.producer_id, a.first_offset) for a in from_four.aborted_transactions or []] == [(9, 5)]
    assert consumed(from_four, 4) == []


async def test_read_committed_fetch_v4_gets_the_same_limits(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC)
    append_transactional(handler_broker, TOPIC, 0, 7, 0, b"aborted")  # 0
    end_transaction(handler_broker, TOPIC, 0, 7, commit=False)  # 1
    append_transactional(handler_broker, TOPIC, 0, 8, 0, b"open")  # 2
    data = await fetch(handler_broker, 0, READ_COMMITTED, version=4)  # the first version with isolation
    assert (data.high_watermark, data.last_stable_offset) == (3, 2)
    assert [(a.producer_id, a.first_offset) for a in data.aborted_transactions or []] == [(7, 0)]
    assert consumed(data) == []
