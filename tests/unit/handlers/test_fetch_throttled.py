"""A consumer's Fetch over its quota (KIP-219): answered at once, empty, with the throttle time.

The connection gives the handler its quota check (RequestContext.fetch_quota); here a stand-in check
records what it was asked and throttles as the test says.
"""

from __future__ import annotations

from typing import Any

import pytest

from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import registration_for
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchRequest, FetchResponse
from odradek.protocol.messages.request_header import RequestHeader
from tests.support.handler_services import LISTENER, HandlerBroker

from .fetching import FETCH_VERSION, answered, consumed, fetch_request, produce

pytestmark = pytest.mark.timeout(30)

TOPIC = "throttled"
P0 = (TOPIC, 0)


class StandInQuota:
    """Throttles by `throttle_ms` and remembers the record bytes of each answer it was asked about."""

    def __init__(self, throttle_ms: int) -> None:
        self.throttle_ms = throttle_ms
        self.asked: list[int] = []

    def __call__(self, record_bytes: int) -> int:
        self.asked.append(record_bytes)
        return self.throttle_ms


async def _fetch(broker: HandlerBroker, request: FetchRequest, quota: StandInQuota | None) -> FetchResponse:
    registration = registration_for(ApiKey.FETCH, FETCH_VERSION, broker.services.mode)
    assert registration is not None
    header = RequestHeader(request_api_key=ApiKey.FETCH, request_api_version=FETCH_VERSION, client_id="c")
    context = RequestContext(
        header, FETCH_VERSION, "127.0.0.1", 50000, LISTENER, broker.services, fetch_quota=quota
    )
    decoded: Any = FetchRequest.decode(request.encode(FETCH_VERSION), FETCH_VERSION)
    response: FetchResponse = await registration.handler(decoded, context)
    return FetchResponse.decode(response.encode(FETCH_VERSION), FETCH_VERSION)


async def test_a_throttled_fetch_is_answered_with_the_throttle_time_no_records_and_no_new_session(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC)
    await produce(handler_broker, TOPIC, 0, b"a" * 100, b"b" * 100)
    quota = StandInQuota(throttle_ms=700)
    response = await _fetch(handler_broker, fetch_request({P0: 0}, session_epoch=0), quota)
    assert quota.asked and quota.asked[0] > 200  # the check saw the bytes the answer would have carried
    assert response.error_code == ErrorCode.NONE
    assert response.throttle_time_ms == 700
    assert response.responses == []
    assert response.session_id == 0  # as Kafka: a throttled full fetch opens no session
    assert not handler_broker.services.fetch_sessions.sessions


async def test_a_fetch_within_its_quota_carries_its_records(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC)
    await produce(handler_broker, TOPIC, 0, b"a", b"b")
    quota = StandInQuota(throttle_ms=0)
    response = await _fetch(handler_broker, fetch_request({P0: 0}, session_epoch=0), quota)
    assert response.throttle_time_ms == 0
    assert consumed(answered(response)[P0]) == [(0, b"a"), (1, b"b")]
    assert response.session_id > 0


async def test_after_a_throttled_incremental_fetch_the_next_answer_carries_what_it_left_out(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC)
    opened = await _fetch(handler_broker, fetch_request({P0: 0}, session_epoch=0), None)
    session_id = opened.session_id
    assert session_id > 0
    await produce(handler_broker, TOPIC, 0, b"x")
    throttled = await _fetch(
        handler_broker, fetch_request({}, session_id=session_id, session_epoch=1), StandInQuota(500)
    )
    assert throttled.throttle_time_ms == 500
    assert throttled.session_id == session_id and throttled.responses == []
    # The session moved on an epoch (as Kafka's); the records and new high watermark come next time.
    after = await _fetch(handler_broker, fetch_request({}, session_id=session_id, session_epoch=2), None)
    assert after.error_code == ErrorCode.NONE and after.throttle_time_ms == 0
    assert consumed(answered(after)[P0]) == [(0, b"x")]
    assert answered(after)[P0].high_watermark == 1
