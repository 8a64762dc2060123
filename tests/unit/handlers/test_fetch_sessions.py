"""Fetch sessions (KIP-227) through the Fetch handler: full fetch, incremental fetches, session errors."""

from __future__ import annotations

import uuid

import pytest

from odradek.partition.fetch_sessions import FetchSessionCache
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, ForgottenTopic
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import BROKERS, TOPIC_ID, produce_request
from tests.unit.handlers.cluster_member import TOPIC as MEMBER_TOPIC

from .fetching import FETCH_VERSION, answered, consumed, fetch_request, produce

pytestmark = pytest.mark.timeout(30)

TOPIC = "sessions"
P0, P1, P2 = (TOPIC, 0), (TOPIC, 1), (TOPIC, 2)


async def open_session(broker: HandlerBroker) -> int:
    """A full fetch (session id 0, epoch 0) of the three partitions from offset 0; the new session's id."""
    response = await broker.call(fetch_request({P0: 0, P1: 0, P2: 0}, session_epoch=0), FETCH_VERSION)
    assert response.error_code == ErrorCode.NONE and response.session_id > 0
    return int(response.session_id)


async def test_full_fetch_opens_a_session_and_answers_every_partition(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    await produce(handler_broker, TOPIC, 0, b"a", b"b")
    response = await handler_broker.call(fetch_request({P0: 0, P1: 0, P2: 0}, session_epoch=0), FETCH_VERSION)
    assert response.error_code == ErrorCode.NONE
    assert response.session_id > 0
    partitions = answered(response)
    assert list(partitions) == [P0, P1, P2]  # a full fetch answers every partition, data or not
    assert consumed(partitions[P0]) == [(0, b"a"), (1, b"b")]
    assert [partitions[p].high_watermark for p in (P0, P1, P2)] == [2, 0, 0]
    session = handler_broker.services.fetch_sessions.sessions[response.session_id]
    assert len(session.partitions) == 3 and session.epoch == 1


async def test_sessionless_full_fetch_opens_no_session(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    response = await handler_broker.call(fetch_request({P0: 0}, session_epoch=-1), FETCH_VERSION)
    assert response.error_code == ErrorCode.NONE and response.session_id == 0
    assert list(answered(response)) == [P0]
    assert not handler_broker.services.fetch_sessions.sessions


async def test_incremental_fetch_answers_only_partitions_with_something_new(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    session_id = await open_session(handler_broker)
    # Nothing changed: an incremental fetch that lists no partition gets an empty answer.
    quiet = await handler_broker.call(
        fetch_request({}, session_id=session_id, session_epoch=1), FETCH_VERSION
    )
    assert quiet.error_code == ErrorCode.NONE and quiet.session_id == session_id
    assert answered(quiet) == {}
    # Records on partition 1 only: the session still fetches all three, but answers partition 1 alone.
    await produce(handler_broker, TOPIC, 1, b"x")
    moved = await handler_broker.call(
        fetch_request({}, session_id=session_id, session_epoch=2), FETCH_VERSION
    )
    assert list(answered(moved)) == [P1]
    assert consumed(answered(moved)[P1]) == [(0, b"x")]
    assert answered(moved)[P1].high_watermark == 1
    # The consumer moves its position on partition 1 (the only one it lists): nothing new to say.
    caught_up = await handler_broker.call(
        fetch_request({P1: 1}, session_id=session_id, session_epoch=3), FETCH_VERSION
    )
    assert answered(caught_up) == {}
    # Records on partition 2 come from the session's remembered offset 0, partition 1 from 1.
    await produce(handler_broker, TOPIC, 2, b"y")
    await produce(handler_broker, TOPIC, 1, b"z")
    both = answered(
        await handler_broker.call(fetch_request({}, session_id=session_id, session_epoch=4), FETCH_VERSION)
    )
    assert sorted(both) == [P1, P2]
    assert consumed(both[P1], 1) == [(1, b"z")] and consumed(both[P2]) == [(0, b"y")]


async def test_incremental_fetch_forgets_partitions_and_adds_new_ones(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    await handler_broker.create_topic("other", 1)
    session_id = await open_session(handler_broker)
    changed = await handler_broker.call(
        fetch_request({("other", 0): 0}, session_id=session_id, session_epoch=1, forgotten=[P0, P2]),
        FETCH_VERSION,
    )
    assert list(answered(changed)) == [("other", 0)]  # new to the session: answered once
    session = handler_broker.services.fetch_sessions.sessions[session_id]
    assert [(key[0], key[2]) for key in session.partitions] == [P1, ("other", 0)]
    await produce(handler_broker, TOPIC, 0, b"forgotten")
    await produce(handler_broker, TOPIC, 1, b"kept")
    after = answered(
        await handler_broker.call(fetch_request({}, session_id=session_id, session_epoch=2), FETCH_VERSION)
    )
    assert list(after) == [P1]


async def test_wrong_session_epoch_is_invalid_fetch_session_epoch(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    session_id = await open_session(handler_broker)
    for epoch in (2, 0x7FFFFFFF):  # ahead of the expected 1
        stale = await handler_broker.call(
            fetch_request({}, session_id=session_id, session_epoch=epoch), FETCH_VERSION
        )
        assert stale.error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
        assert stale.responses == [] and stale.session_id == 0  # as Kafka
    # The session survives a bad epoch: the right one still works.
    right = await handler_broker.call(
        fetch_request({}, session_id=session_id, session_epoch=1), FETCH_VERSION
    )
    assert right.error_code == ErrorCode.NONE and right.session_id == session_id


async def test_unknown_session_id_is_fetch_session_id_not_found(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    session_id = await open_session(handler_broker)
    unknown = await handler_broker.call(
        fetch_request({P0: 0}, session_id=session_id + 1, session_epoch=1), FETCH_VERSION
    )
    assert unknown.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert unknown.responses == []
    assert unknown.session_id == 0  # as Kafka: an error names no session


async def test_final_epoch_closes_the_session(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    session_id = await open_session(handler_broker)
    closing = await handler_broker.call(
        fetch_request({P0: 0}, session_id=session_id, session_epoch=-1), FETCH_VERSION
    )
    assert closing.error_code == ErrorCode.NONE and closing.session_id == 0
    assert list(answered(closing)) == [P0]  # answered as a sessionless full fetch
    gone = await handler_broker.call(fetch_request({}, session_id=session_id, session_epoch=1), FETCH_VERSION)
    assert gone.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


async def test_session_epoch_wraps_from_int32_max_to_1(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    session_id = await open_session(handler_broker)
    handler_broker.services.fetch_sessions.sessions[session_id].epoch = 0x7FFFFFFF
    last = await handler_broker.call(
        fetch_request({}, session_id=session_id, session_epoch=0x7FFFFFFF), FETCH_VERSION
    )
    assert last.error_code == ErrorCode.NONE
    # Kafka's clients follow 2147483647 with 1 (FetchMetadata.nextEpoch): so must the session.
    wrapped = await handler_broker.call(
        fetch_request({}, session_id=session_id, session_epoch=1), FETCH_VERSION
    )
    assert wrapped.error_code == ErrorCode.NONE


class Clock:
    """The session cache's clock, moved by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def full_cache(broker: HandlerBroker, slots: int) -> Clock:
    """Give `broker` a session cache of `slots` sessions on a manual clock."""
    clock = Clock()
    broker.services.fetch_sessions = FetchSessionCache(slots, clock=clock)
    return clock


async def session_works(broker: HandlerBroker, session_id: int, epoch: int) -> bool:
    response = await broker.call(fetch_request({}, session_id=session_id, session_epoch=epoch), FETCH_VERSION)
    return bool(response.error_code == ErrorCode.NONE)


async def test_full_cache_answers_newcomers_without_a_session_and_keeps_recent_sessions(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    full_cache(handler_broker, 2)
    first, second = await open_session(handler_broker), await open_session(handler_broker)
    await produce(handler_broker, TOPIC, 0, b"a")
    newcomer = await handler_broker.call(fetch_request({P0: 0, P1: 0, P2: 0}, session_epoch=0), FETCH_VERSION)
    assert newcomer.error_code == ErrorCode.NONE and newcomer.session_id == 0  # served, sessionless
    assert consumed(answered(newcomer)[P0]) == [(0, b"a")]
    # Without this rule every newcomer would evict a live consumer's session, which would come back
    # with a full fetch and evict another: each fetch of a crowded broker a FETCH_SESSION_ID_NOT_FOUND.
    assert await session_works(handler_broker, first, 1)
    assert await session_works(handler_broker, second, 1)


async def test_full_cache_evicts_the_session_unused_for_two_minutes(handler_broker: HandlerBroker) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    clock = full_cache(handler_broker, 2)
    idle, busy = await open_session(handler_broker), await open_session(handler_broker)
    clock.now += 100
    assert await session_works(handler_broker, busy, 1)
    clock.now += 21  # idle unused for 121 s, busy for 21 s
    newcomer = await handler_broker.call(fetch_request({P0: 0}, session_epoch=0), FETCH_VERSION)
    assert newcomer.session_id > 0
    assert not await session_works(handler_broker, idle, 1)
    assert await session_works(handler_broker, busy, 2)
    assert await session_works(handler_broker, newcomer.session_id, 1)


async def test_full_cache_evicts_an_old_smaller_session_for_a_bigger_one(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    clock = full_cache(handler_broker, 1)
    opened = await handler_broker.call(fetch_request({P0: 0}, session_epoch=0), FETCH_VERSION)
    small = opened.session_id
    clock.now += 121
    assert await session_works(handler_broker, small, 1)  # in use, but created over two minutes ago
    same_size = await handler_broker.call(fetch_request({P1: 0}, session_epoch=0), FETCH_VERSION)
    assert same_size.session_id == 0  # worth no more than the one it would replace
    bigger = await handler_broker.call(fetch_request({P0: 0, P1: 0}, session_epoch=0), FETCH_VERSION)
    assert bigger.session_id > 0
    assert not await session_works(handler_broker, small, 2)
    # The new session is young: even a bigger newcomer cannot take its place yet.
    biggest = await handler_broker.call(fetch_request({P0: 0, P1: 0, P2: 0}, session_epoch=0), FETCH_VERSION)
    assert biggest.session_id == 0
    assert await session_works(handler_broker, bigger.session_id, 1)


async def test_v13_session_names_topics_by_id_and_forgets_by_id(handler_broker: HandlerBroker) -> None:
    topic = await handler_broker.create_topic(TOPIC, 3)
    by_id = [FetchTopic(topic_id=topic.topic_id, partitions=[_partition(0), _partition(1)])]
    opened = await handler_broker.call(
        FetchRequest(max_wait_ms=0, min_bytes=0, session_epoch=0, topics=by_id), 13
    )
    assert opened.error_code == ErrorCode.NONE and opened.session_id > 0
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in opened.responses] == [
        (topic.topic_id, [0, 1])
    ]
    forget = [ForgottenTopic(topic_id=topic.topic_id, partitions=[0])]
    await handler_broker.call(
        FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            session_id=opened.session_id,
            session_epoch=1,
            forgotten_topics_data=forget,
        ),
        13,
    )
    await produce(handler_broker, TOPIC, 0, b"forgotten")
    await produce(handler_broker, TOPIC, 1, b"kept")
    after = await handler_broker.call(
        FetchRequest(max_wait_ms=0, min_bytes=0, session_id=opened.session_id, session_epoch=2), 13
    )
    assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in after.responses] == [
        (topic.topic_id, [1])
    ]


async def test_v13_unknown_topic_id_is_answered_unknown_topic_id(handler_broker: HandlerBroker) -> None:
    unknown = uuid.uuid4()
    response = await handler_broker.call(
        FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            session_epoch=0,
            topics=[FetchTopic(topic_id=unknown, partitions=[_partition(0)])],
        ),
        13,
    )
    assert [p.error_code for t in response.responses for p in t.partitions] == [ErrorCode.UNKNOWN_TOPIC_ID]
    assert response.responses[0].topic_id == unknown


def _partition(index: int) -> FetchPartition:
    return FetchPartition(partition=index, fetch_offset=0, partition_max_bytes=1 << 20)


async def test_incremental_fetch_serves_partitions_in_turn_under_max_bytes(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic(TOPIC, 3)
    for partition, batches in ((0, 6), (1, 3)):  # partition 0 busier: it could fill every response
        for index in range(batches):
            await produce(handler_broker, TOPIC, partition, b"%d-%d" % (partition, index))
    # max_bytes 1: only the first partition with data gets one batch (it always gets one whole batch).
    opened = await handler_broker.call(
        fetch_request({P0: 0, P1: 0}, session_epoch=0, max_bytes=1), FETCH_VERSION
    )
    first = answered(opened)
    assert consumed(first[P0]) == [(0, b"0-0")] and consumed(first[P1]) == []
    positions = {P0: 1, P1: 0}
    last, served = P0, []
    for epoch in (1, 2, 3, 4):  # each time listing the partition just served, at its new position
        request = fetch_request(
            {last: positions[last]}, session_id=opened.session_id, session_epoch=epoch, max_bytes=1
        )
        response = await handler_broker.call(request, FETCH_VERSION)
        with_data = [p for p, data in answered(response).items() if consumed(data, positions[p])]
        assert len(with_data) == 1
        last = with_data[0]
        served.append(last)
        positions[last] += 1
    # As in Kafka's sessions, a partition that got records in an incremental fetch goes to the back
    # (the full fetch keeps the request's order): busy partition 0 does not starve partition 1.
    assert served == [P0, P1, P0, P1]


async def test_a_topic_id_unknown_when_it_joined_the_session_is_read_once_known(
    cluster_member: HandlerBroker,
) -> None:
    """As Kafka's maybeResolveUnknownName: the session answers UNKNOWN_TOPIC_ID only while the id is
    unknown here, not for as long as the session lives."""
    request = fetch_request({(MEMBER_TOPIC, 0): 0}, session_epoch=0)
    request.topics[0].topic_id = TOPIC_ID
    opened = await cluster_member.call(request, 13)
    assert opened.session_id > 0
    assert opened.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    led = [Partition(MEMBER_TOPIC, 0, leader=2, leader_epoch=3, replicas=[2])]
    await cluster_member.call(update_metadata(BROKERS, led, {MEMBER_TOPIC: TOPIC_ID}), 8)
    await cluster_member.call(leader_and_isr(led, {MEMBER_TOPIC: TOPIC_ID}), 7)
    await cluster_member.call(produce_request(0), 9)
    incremental = await cluster_member.call(
        fetch_request({}, session_id=opened.session_id, session_epoch=1), 13
    )
    (partition,) = incremental.responses[0].partitions
    assert (partition.error_code, partition.high_watermark) == (ErrorCode.NONE, 1)
    assert partition.records
