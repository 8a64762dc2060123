"""Kafka's windowed rate and throttle time (Rate over WindowedSum, QuotaUtils.throttleTime)."""

from __future__ import annotations

import pytest

from odradek.security.quota_rate import Rate, java_round


def test_a_first_record_is_spread_over_samples_minus_one_windows() -> None:
    # 11 samples of 1 s: the elapsed time is never taken as less than 10 s, so a first burst of
    # 1000 bytes measures 100 B/s, not 1000 B/s over a fraction of a second.
    rate = Rate(samples=11, window_ms=1000)
    rate.record(1000, now_ms=0)
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == pytest.approx(100.0)


def test_throttle_time_is_the_silence_that_brings_the_rate_back_to_the_bound() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(3000, now_ms=0)  # 300 B/s against a bound of 100 B/s
    # (300 - 100) / 100 * 10 000 ms
    assert rate.throttle_time_ms(100.0, 0) == 20_000


def test_no_throttle_within_the_bound() -> None:
    rate = Rate(samples=11, window_ms=1000)
    rate.record(500, now_ms=0)
    assert rate.throttle_time_ms(100.0, 0) == 0


def test_recording_past_a_window_moves_to_the_next_sample_and_old_samples_expire() -> None:
    rate = Rate(samples=2, window_ms=1000)
    rate.record(100, now_ms=0)
    rate.record(100, now_ms=1500)  # a second sample
    assert rate.measure(1500) == pytest.approx(200 / 1.5)
    # A sample whose last record is samples * window old is reset (it restarts now): only the second
    # one counts, over the time since it started plus the windows to make up one full window.
    assert rate.measure(2000) == pytest.approx(100 / 1.5)
    assert rate.measure(3500) == pytest.approx(0.0)


def test_the_ring_reuses_the_oldest_slot_after_samples_plus_one_windows() -> None:
    rate = Rate(samples=2, window_ms=1000)
    for second in range(5):
        rate.record(10, now_ms=second * 1000)
    # Samples alive at 4 s: the ones started at 3 s and 4 s (the one at 2 s ended 2 s ago: expired).
    assert rate.measure(4000) == pytest.approx(20 / 1.0)


def test_java_round_rounds_halves_up() -> None:
    assert java_round(2.5) == 3
    assert java_round(3.5) == 4
    assert java_round(-0.5) == 0
