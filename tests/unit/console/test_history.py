"""The console's in-memory history and the rates computed from counters."""

from __future__ import annotations

from odradek.console.history import History, rate


def test_a_series_keeps_its_last_points_only() -> None:
    history = History(length=3)
    for second in range(5):
        history.add("lag", float(second), second * 10)
    assert history.points("lag") == [(2.0, 20), (3.0, 30), (4.0, 40)]
    assert history.latest("lag") == 40
    assert history.latest("unknown") is None
    assert history.points("unknown") == []


def test_names_by_prefix() -> None:
    history = History(length=2)
    history.add("group.lag.a", 0, 1)
    history.add("group.lag.b", 0, 1)
    history.add("topic.x", 0, 1)
    assert history.names("group.") == ["group.lag.a", "group.lag.b"]


def test_rate_is_growth_per_second() -> None:
    assert rate({"a": 100, "b": 0}, {"a": 150, "b": 50}, 10) == 10.0


def test_a_shrinking_counter_counts_as_no_growth() -> None:
    # retention deleted a segment of a (its size fell), b grew: only b's growth is throughput
    assert rate({"a": 1000, "b": 0}, {"a": 200, "b": 40}, 2) == 20.0


def test_keys_new_since_the_last_sample_are_left_out() -> None:
    assert rate({}, {"new-topic-0": 500}, 5) == 0.0
    assert rate({"a": 1}, {"a": 2}, 0) == 0.0
