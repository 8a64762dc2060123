"""Fetch's long poll: an answer waits until min_bytes are readable or max_wait_ms has passed.

The wait is woken by appends to the fetched partitions (the append notifier), so these tests append
while a fetch waits and check when it answers, on the loop's clock.
"""

from __future__ import annotations

import asyncio

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchResponse
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

TOPIC = "long-poll"
P0, P1 = (TOPIC, 0), (TOPIC, 1)
#: Far longer than any test takes: a fetch that returns early was not held by max_wait_ms.
LONG_WAIT_MS = 20_000
VALUE = b"v" * 100  # one such record makes a batch of about 170 bytes


def start_fetch(
    broker: HandlerBroker, min_bytes: int, max_wait_ms: int = LONG_WAIT_MS, isolation_level: int = 0
) -> asyncio.Task[FetchResponse]:
    """A Fetch of partition 0 from offset 0, left running (await it for the response)."""
    request = fetch_request(
        {P0: 0}, min_bytes=min_bytes, max_wait_ms=max_wait_ms, isolation_level=isolation_level
    )
    return asyncio.ensure_future(broker.call(request, FETCH_VERSION))


async def still_waiting(fetch: asyncio.Task[FetchResponse]) -> bool:
    """Whether the fetch is still held after the loop has run everything ready (and a little more)."""
    await asyncio.sleep(0.05)
    return not fetch.done()


async def test_fetch_waits_until_min_bytes_are_appended(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    fetch = start_fetch(handler_broker, min_bytes=300)
    assert await still_waiting(fetch)
    await produce(handler_broker, TOPIC, 0, VALUE)  # ~170 bytes: not enough
    assert await still_waiting(fetch)
    await produce(handler_broker, TOPIC, 1, VALUE, VALUE)  # another partition: does not count
    assert await still_waiting(fetch)
    await produce(handler_broker, TOPIC, 0, VALUE)  # now ~340 bytes on the fetched partition
    response = await asyncio.wait_for(fetch, 5)
    assert loop.time() - started < LONG_WAIT_MS / 1000 / 2
    assert response.error_code == ErrorCode.NONE
    assert consumed(answered(response)[P0]) == [(0, VALUE), (1, VALUE)]


async def test_fetch_answers_with_what_there_is_when_max_wait_ms_passes(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    await produce(handler_broker, TOPIC, 0, VALUE)
    loop = asyncio.get_running_loop()
    started = loop.time()
    response = await start_fetch(handler_broker, min_bytes=1 << 20, max_wait_ms=300)
    waited = loop.time() - started
    assert 0.3 <= waited < 5, waited
    assert consumed(answered(response)[P0]) == [(0, VALUE)]


async def test_fetch_with_min_bytes_already_there_answers_at_once(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    await produce(handler_broker, TOPIC, 0, VALUE)
    response = await asyncio.wait_for(start_fetch(handler_broker, min_bytes=1), 5)
    assert consumed(answered(response)[P0]) == [(0, VALUE)]


async def test_fetch_of_an_empty_partition_with_min_bytes_0_answers_at_once(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    response = await asyncio.wait_for(start_fetch(handler_broker, min_bytes=0), 5)
    assert consumed(answered(response)[P0]) == []


async def test_fetch_error_answers_at_once(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    request = fetch_request({P0: 5}, min_bytes=1, max_wait_ms=LONG_WAIT_MS)  # past the log end
    response = await asyncio.wait_for(handler_broker.call(request, FETCH_VERSION), 5)
    assert answered(response)[P0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE


async def test_read_committed_fetch_waits_for_the_commit_not_for_the_append(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    fetch = start_fetch(handler_broker, min_bytes=1, isolation_level=1)
    append_transactional(handler_broker, TOPIC, 0, 7, 0, VALUE)  # past the last stable offset
    assert await still_waiting(fetch)  # appended, but not readable at read_committed
    end_transaction(handler_broker, TOPIC, 0, 7, commit=True)
    response = await asyncio.wait_for(fetch, 5)
    assert consumed(answered(response)[P0]) == [(0, VALUE)]


async def test_incremental_fetch_with_no_changes_waits_for_an_append(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 2)
    opened = await handler_broker.call(fetch_request({P0: 0, P1: 0}, session_epoch=0), FETCH_VERSION)
    session = {"session_id": opened.session_id, "session_epoch": 1}
    fetch = asyncio.ensure_future(
        handler_broker.call(
            fetch_request({}, min_bytes=1, max_wait_ms=LONG_WAIT_MS, **session), FETCH_VERSION
        )
    )
    assert await still_waiting(fetch)  # the session's partitions are fetched though none is listed
    await produce(handler_broker, TOPIC, 1, VALUE)
    response = await asyncio.wait_for(fetch, 5)
    assert list(answered(response)) == [P1]
