"""A rate over sampled windows and the throttle time of a quota breach, with Kafka's arithmetic.

Kafka measures a client's rate with a `Rate` over a `WindowedSum` (org.apache.kafka.common.metrics):
`quota.window.num` samples of `quota.window.size.seconds` each, kept in a ring of samples + 1 slots.
Reproduced here because the throttle time a client is told depends on every detail:
- a sample is complete once its window has passed; recording then moves on to the next slot, which is
  reset (its start is the time of that record);
- a sample whose last record is `samples * window` old is reset when the rate is measured;
- the elapsed time the sum is divided by runs from the oldest sample's start to now, but is never less
  than `samples - 1` whole windows (so that a client's first bytes do not measure as a huge rate);
- a breach of bound B by measured rate R is throttled for round((R - B) / B * window_size) ms: how
  long the client must stay silent for the rate over the window to come back to B (QuotaUtils).
Times are integer milliseconds, as Kafka's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


class Rate:
    """Per-second rate of what is recorded, over `samples` windows of `window_ms` each."""

    __slots__ = ("_current", "_ring", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample of at least one millisecond")
        self.samples = samples
        self.window_ms = window_ms
        self._ring: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """The rate per second at `now_ms` (the windowed sum over the elapsed window)."""
        total = self._sum(now_ms)
        return total / (self.window_size_ms(now_ms) / 1000)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge_obsolete(now_ms)
        elapsed = now_ms - self._oldest(now_ms).start_ms
        full_windows = elapsed // self.window_ms
        least = self.samples - 1
        if full_windows < least:
            elapsed += (least - full_windows) * self.window_ms
        return max(elapsed, 1)

    def throttle_time_ms(self, bound: float, now_ms: int) -> int:
        """0 while the rate is within `bound`; else how long the client must wait (QuotaUtils)."""
        value = self.measure(now_ms)
        if value <= bound:
            return 0
        return java_round((value - bound) / bound * self.window_size_ms(now_ms))

    # ----- the ring of samples --------------------------------------------------------------------

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms, now_ms))
        return self._ring[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self.samples + 1)
        if self._current >= len(self._ring):
            sample = _Sample(now_ms, now_ms)
            self._ring.append(sample)
            return sample
        sample = self._ring[self._current]
        sample.reset(now_ms)
        return sample

    def _oldest(self, now_ms: int) -> _Sample:
        if not self._ring:
            self._ring.append(_Sample(now_ms, now_ms))
        return min(self._ring, key=lambda sample: sample.start_ms)

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_age = self.samples * self.window_ms
        for sample in self._ring:
            if now_ms - sample.last_event_ms >= expire_age:
                sample.reset(now_ms)

    def _sum(self, now_ms: int) -> float:
        self._purge_obsolete(now_ms)
        return sum(sample.value for sample in self._ring)


class SimpleRate(Rate):
    """Kafka's SimpleRate (the replication quotas' rate): the elapsed time is at least one window, not
    `samples - 1` of them, so a replica's first burst already measures as the rate it is."""

    __slots__ = ()

    def window_size_ms(self, now_ms: int) -> int:
        self._purge_obsolete(now_ms)
        return max(now_ms - self._oldest(now_ms).start_ms, self.window_ms)


def java_round(value: float) -> int:
    """Java's Math.round: halves round up (Python's round() rounds them to even)."""
    return math.floor(value + 0.5)
