"""How numbers look on the pages: sizes, rates, durations, timestamps (Jinja filters)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from jinja2 import Environment

#: What a number the cluster did not give shows as (an en dash, as tables print a blank).
NONE = "\u2013"
_SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def install(env: Environment) -> None:
    env.filters["bytes"] = human_bytes
    env.filters["rate"] = human_rate
    env.filters["duration_ms"] = human_duration_ms
    env.filters["timestamp"] = timestamp
    env.filters["number"] = number
    env.filters["points_json"] = points_json
    env.filters["chart_json"] = chart_json
    env.filters["recent"] = recent
    env.filters["path_part"] = path_part


def path_part(name: str) -> str:
    """A group id as one URL path segment: Kafka allows any character in it, '/', '#' and '?' too."""
    return quote(name, safe="")


def human_bytes(size: int | float | None) -> str:
    if size is None:
        return NONE
    value = float(size)
    for unit in _SIZE_UNITS:
        if abs(value) < 1024 or unit == _SIZE_UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_rate(per_second: float | None, unit: str = "") -> str:
    if per_second is None:
        return NONE
    if unit == "B":
        return f"{human_bytes(per_second)}/s"
    text = f"{per_second:,.0f}" if per_second >= 10 or per_second == 0 else f"{per_second:.1f}"
    return f"{text}/s"


def human_duration_ms(text: str | int | None) -> str:
    """A retention.ms-like value: -1 is forever, the rest in the largest unit that divides it."""
    if text is None or text == "":
        return NONE
    try:
        ms = int(text)
    except ValueError:
        return str(text)
    if ms < 0:
        return "forever"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= size and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def timestamp(ms: int | None) -> str:
    if ms is None or ms < 0:
        return NONE
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d}Z"


def number(value: int | None) -> str:
    return NONE if value is None else f"{value:,}"


def points_json(points: list[tuple[float, float]]) -> str:
    """A series as uPlot wants it, [[times...], [values...]], for a data- attribute."""
    data: list[list[Any]] = [[round(t, 3) for t, _ in points], [v for _, v in points]]
    return json.dumps(data)


def recent(points: list[tuple[float, float]], seconds: float = 10.0) -> float | None:
    """The mean of a rate series over its last `seconds`: one sample alone jumps between bursts and 0."""
    if not points:
        return None
    since = points[-1][0] - seconds
    window = [value for time, value in points if time > since]
    return sum(window) / len(window)


def chart_json(series: dict[str, list[tuple[float, float]]]) -> str:
    """Several named series on one time axis for uPlot: {"labels": [...], "data": [[times], [v]...]}.

    The sampler records every series at the same instants; a series missing at an instant gets null
    (uPlot leaves a gap).
    """
    times = sorted({round(t, 3) for points in series.values() for t, _ in points})
    index = {t: i for i, t in enumerate(times)}
    data: list[list[Any]] = [list(times)]
    for points in series.values():
        row: list[Any] = [None] * len(times)
        for t, value in points:
            row[index[round(t, 3)]] = value
        data.append(row)
    return json.dumps({"labels": list(series), "data": data})
