"""How numbers look on the console's pages."""

from __future__ import annotations

import json

from odradek.console.filters import (
    chart_json,
    human_bytes,
    human_duration_ms,
    human_rate,
    number,
    path_part,
    recent,
    timestamp,
)


def test_sizes() -> None:
    assert human_bytes(None) == "\u2013"
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1023 B"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(5 * 1024**3) == "5.0 GiB"


def test_rates() -> None:
    assert human_rate(None) == "\u2013"
    assert human_rate(0) == "0/s"
    assert human_rate(2.5) == "2.5/s"
    assert human_rate(12345.6) == "12,346/s"
    assert human_rate(2048, "B") == "2.0 KiB/s"


def test_retention_durations() -> None:
    assert human_duration_ms("604800000") == "7 d"
    assert human_duration_ms("3600000") == "1 h"
    assert human_duration_ms("90000") == "90 s"
    assert human_duration_ms("-1") == "forever"
    assert human_duration_ms("1500") == "1500 ms"
    assert human_duration_ms(None) == "\u2013"


def test_timestamps_are_utc_with_milliseconds() -> None:
    assert timestamp(1_700_000_000_123) == "2023-11-14 22:13:20.123Z"
    assert timestamp(-1) == "\u2013"


def test_numbers_have_thousands_separators() -> None:
    assert number(1234567) == "1,234,567"
    assert number(None) == "\u2013"


def test_chart_series_share_one_time_axis_with_gaps_as_null() -> None:
    spec = json.loads(chart_json({"total": [(1.0, 5), (2.0, 7)], "orders-0": [(2.0, 3)]}))
    assert spec == {"labels": ["total", "orders-0"], "data": [[1.0, 2.0], [5, 7], [None, 3]]}


def test_a_rate_shown_is_the_mean_of_the_last_ten_seconds() -> None:
    assert recent([]) is None
    assert recent([(0.0, 100.0), (5.0, 10.0), (10.0, 20.0), (15.0, 0.0)]) == 10.0


def test_a_group_id_becomes_one_path_segment() -> None:
    assert path_part("team/a b#1?x%") == "team%2Fa%20b%231%3Fx%25"
