"""Time series kept in the console process's memory for the charts: throughput and consumer lag.

Nothing is persisted: a restarted console starts its charts empty, as Kafka UI's and AKHQ's do without a
metrics store. Each series keeps its last `length` points (an hour at the default 5 s sampling).
"""

from __future__ import annotations

import threading
from collections import deque


class History:
    def __init__(self, length: int) -> None:
        self.length = length
        self._series: dict[str, deque[tuple[float, float]]] = {}
        self._lock = threading.Lock()

    def add(self, name: str, time: float, value: float) -> None:
        with self._lock:
            series = self._series.get(name)
            if series is None:
                series = self._series[name] = deque(maxlen=self.length)
            series.append((time, value))

    def points(self, name: str) -> list[tuple[float, float]]:
        with self._lock:
            return list(self._series.get(name, ()))

    def latest(self, name: str) -> float | None:
        with self._lock:
            series = self._series.get(name)
            return series[-1][1] if series else None

    def names(self, prefix: str) -> list[str]:
        with self._lock:
            return sorted(name for name in self._series if name.startswith(prefix))


def rate(before: dict[str, int], after: dict[str, int], seconds: float) -> float:
    """Growth per second of counters keyed alike; a counter that shrank (retention, a deleted topic, a
    reset) counts as no growth rather than negative throughput."""
    if seconds <= 0:
        return 0.0
    grown = sum(max(0, value - before[key]) for key, value in after.items() if key in before)
    return grown / seconds
