"""Share sessions: epochs, the bound on how many a broker holds, and idle sessions making room."""

from __future__ import annotations

import pytest

from odradek.partition.share.sessions import ShareSessionCache
from odradek.protocol.error_codes import ErrorCode, KafkaError


class Clock:
    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


def test_a_full_cache_makes_room_by_evicting_a_session_idle_past_the_idle_time() -> None:
    clock = Clock()
    cache = ShareSessionCache(2, idle_ms=45_000, now_ms=clock)
    cache.open("g", "a", set())
    cache.open("g", "b", set())
    clock.now_ms = 10_000
    cache.get("g", "b", 1)  # b is in use
    with pytest.raises(KafkaError) as full:
        cache.open("g", "c", set())
    assert full.value.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    clock.now_ms = 46_000  # a has been idle for 46 s (a member that died without closing)
    cache.open("g", "c", set())
    assert set(cache.sessions) == {("g", "b"), ("g", "c")}
    with pytest.raises(KafkaError) as gone:
        cache.get("g", "a", 1)
    assert gone.value.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_share_session_epochs_move_on_and_wrap() -> None:
    cache = ShareSessionCache(1, idle_ms=45_000, now_ms=lambda: 0)
    session = cache.open("g", "a", set())
    session.epoch = 2**31 - 1
    cache.get("g", "a", 2**31 - 1)
    assert session.epoch == 1
    with pytest.raises(KafkaError) as stale:
        cache.get("g", "a", 5)
    assert stale.value.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH


def test_a_closed_connection_closes_the_sessions_opened_on_it_and_no_other() -> None:
    cache = ShareSessionCache(10, idle_ms=45_000, now_ms=lambda: 0)
    cache.open("g", "a", set(), 1)
    cache.open("g", "b", set(), 1)
    cache.open("g", "c", set(), 2)
    cache.open("g", "b", set(), 3)  # b opened again on another connection: no longer 1's
    assert [(s.group_id, s.member_id) for s in cache.connection_closed(1)] == [("g", "a")]
    assert set(cache.sessions) == {("g", "b"), ("g", "c")}
    cache.close("g", "c")
    assert [s.member_id for s in cache.connection_closed(3)] == ["b"]
    assert cache.sessions == {} and cache.connections() == 0
