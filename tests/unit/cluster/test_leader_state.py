"""A leader's rules about its followers (Kafka's Replica and Partition): when a follower counts as
caught up, the high watermark over the maximal ISR, who falls out of sync, and who may join."""

from __future__ import annotations

from odradek.cluster.replication.fetcher_manager import fetcher_index, java_string_hash
from odradek.partition.leader_state import UNKNOWN_OFFSET, FollowerProgress, LeaderState


def test_a_follower_fetching_at_the_leaders_end_is_caught_up_now() -> None:
    progress = FollowerProgress()
    progress.record_fetch(10, leader_end=10, now_ms=1000)
    assert (progress.log_end_offset, progress.last_caught_up_ms) == (10, 1000)


def test_a_follower_reaching_the_previous_leader_end_was_caught_up_at_the_previous_fetch() -> None:
    progress = FollowerProgress()
    progress.record_fetch(5, leader_end=8, now_ms=1000)
    assert progress.last_caught_up_ms == 0
    progress.record_fetch(8, leader_end=12, now_ms=1500)
    assert progress.last_caught_up_ms == 1000
    progress.record_fetch(9, leader_end=20, now_ms=2000)  # behind what the leader had at 1500
    assert progress.last_caught_up_ms == 1000


def test_the_high_watermark_is_the_lowest_end_over_the_maximal_isr() -> None:
    state = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2], now_ms=0)
    assert state.high_watermark(10, now_ms=100_000, lag_time_max_ms=10) == UNKNOWN_OFFSET  # 2 unheard
    state.followers[2].record_fetch(7, 10, 1)
    state.followers[3].record_fetch(3, 10, 1)
    assert state.high_watermark(10, 100_000, 10) == 7  # broker 3 is neither in the ISR nor caught up
    state.pending_isr = (1, 2, 3)
    assert state.high_watermark(10, 100_000, 10) == 3  # a pending expansion counts already
    state.pending_isr = (1,)
    assert state.high_watermark(10, 100_000, 10) == 7  # a pending shrink does not yet


def test_a_caught_up_follower_outside_the_isr_holds_the_high_watermark_so_it_can_join() -> None:
    state = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2], now_ms=0)
    state.followers[3].record_fetch(10, 10, 1000)  # caught up at 1000
    state.followers[3].record_fetch(10, 14, 1500)  # the leader has appended since
    state.followers[2].record_fetch(14, 14, 1500)
    assert state.high_watermark(14, now_ms=2000, lag_time_max_ms=3000) == 10  # broker 3 may join soon
    assert state.high_watermark(14, now_ms=9000, lag_time_max_ms=3000) == 14  # no longer caught up


def test_a_dead_brokers_caught_up_replica_outside_the_isr_does_not_hold_the_high_watermark() -> None:
    # The controller removed broker 3 (dead) from the ISR: its last fetch was recent, but no leader
    # waits for a broker that is not alive (acks=all and the coordinators' writes would stall).
    state = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2], now_ms=0)
    state.followers[3].record_fetch(10, 10, 1000)
    state.followers[2].record_fetch(14, 14, 1500)
    assert state.high_watermark(14, 2000, 3000, eligible=lambda replica: replica != 3) == 14


def test_a_re_elected_leader_keeps_log_ends_but_not_catch_up_times_of_followers_outside_the_new_isr() -> None:
    # Kafka's resetReplicaState: the follower the controller took out of the ISR (a broker in
    # controlled shutdown, still alive) caught up recently, but no longer holds the high watermark.
    t = 1_700_000_000_000  # wall-clock milliseconds, as the leader's clock gives
    before = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2, 3], now_ms=t)
    before.followers[2].record_fetch(14, 14, t + 500)
    before.followers[3].record_fetch(10, 10, t + 400)
    again = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2], now_ms=t + 600)
    again.keep_progress_of(before, leader_end=14, now_ms=t + 600)
    assert [again.followers[r].log_end_offset for r in (2, 3)] == [14, 10]
    assert (again.followers[2].last_caught_up_ms, again.followers[3].last_caught_up_ms) == (t + 600, 0)
    assert again.high_watermark(14, now_ms=t + 700, lag_time_max_ms=30_000) == 14
    assert before.high_watermark(14, now_ms=t + 700, lag_time_max_ms=30_000) == 10  # as it was


def test_followers_not_caught_up_within_the_lag_are_out_of_sync() -> None:
    state = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2, 3], now_ms=1000)
    state.followers[2].record_fetch(4, 4, 5000)
    assert state.out_of_sync(now_ms=12_000, lag_time_max_ms=10_000) == [3]
    assert state.out_of_sync(now_ms=10_999, lag_time_max_ms=10_000) == []


def test_a_follower_joins_at_the_high_watermark_and_the_epoch_start() -> None:
    state = LeaderState.on_become_leader(1, [1, 2, 3], [1, 2], now_ms=0)
    state.followers[3].record_fetch(5, 9, 1)
    assert not state.may_join_isr(3, high_watermark=6, leader_epoch_start_offset=0)
    assert not state.may_join_isr(3, high_watermark=5, leader_epoch_start_offset=7)
    assert state.may_join_isr(3, high_watermark=5, leader_epoch_start_offset=5)
    assert not state.may_join_isr(2, high_watermark=0, leader_epoch_start_offset=0)  # in the ISR already


def test_fetchers_are_chosen_as_kafkas_get_fetcher_id() -> None:
    assert java_string_hash("test") == 3556498
    assert java_string_hash("a-much-longer-topic-name-overflowing") == _java_hash(
        "a-much-longer-topic-name-overflowing"
    )
    assert fetcher_index("test", 0, 2) == (31 * 3556498) % 2
    assert {fetcher_index("t", p, 3) for p in range(6)} == {0, 1, 2}


def _java_hash(text: str) -> int:
    value = 0
    for char in text:
        value = (31 * value + ord(char)) % 2**32
    return value - 2**32 if value >= 2**31 else value
