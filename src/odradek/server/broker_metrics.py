"""The counters the request path bumps (`BrokerMetrics`), and the Prometheus collector over them.

The hot path only bumps plain counters owned by the event loop: per topic bytes and messages in
(one call per appended partition, counting records from the batch headers storage already read),
bytes out to clients (one call per fetched partition; as Kafka's BytesOutPerSec, not to followers)
and per API request latencies (one call per request, into a fixed-bucket histogram). What is read from
the broker's state at scrape time is `state_metrics.py`'s; the endpoint serving both is `metrics.py`'s.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric

from odradek.handlers._common.services import Services
from odradek.protocol.api_keys import ApiKey
from odradek.server import state_metrics

#: Request latency buckets, in seconds: from a sub-millisecond metadata call to a long-polling fetch.
LATENCY_BUCKETS: Final = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_API_NAMES: Final = {int(key): key.name.lower() for key in ApiKey}


class BrokerMetrics:
    """Counters the request path bumps, and a Prometheus collector that reads them with the state."""

    def __init__(self, services: Services, connection_count: Callable[[], int]) -> None:
        self.services = services
        self.connection_count = connection_count
        self.bytes_in: dict[str, int] = {}
        self.messages_in: dict[str, int] = {}
        self.bytes_out: dict[str, int] = {}
        self.latencies: dict[int, _Histogram] = {}

    # ----- hooks (on the event loop, per partition or per request: keep them O(1)) ---------------

    def produced(self, topic: str, size: int, records: int) -> None:
        self.bytes_in[topic] = self.bytes_in.get(topic, 0) + size
        self.messages_in[topic] = self.messages_in.get(topic, 0) + records

    def fetched(self, topic: str, size: int) -> None:
        self.bytes_out[topic] = self.bytes_out.get(topic, 0) + size

    def request_done(self, frame: bytes | bytearray, seconds: float) -> None:
        """One request handled (answered, or dropped for acks=0): its API key is the frame's first int16."""
        if len(frame) < 2:
            return
        api_key = (frame[0] << 8) | frame[1]
        histogram = self.latencies.get(api_key)
        if histogram is None:
            if api_key not in _API_NAMES:
                return  # not a Kafka API: no label for garbage
            histogram = self.latencies[api_key] = _Histogram()
        histogram.observe(seconds)

    # ----- prometheus_client Collector ------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        yield from self._traffic()
        yield from self._requests()
        yield from state_metrics.collect(self.services, self.connection_count)

    def _traffic(self) -> Iterator[Metric]:
        for name, documentation, values in (
            ("odradek_topic_bytes_in", "Record batch bytes appended by Produce, per topic", self.bytes_in),
            ("odradek_topic_messages_in", "Records appended by Produce, per topic", self.messages_in),
            (
                "odradek_topic_bytes_out",
                "Record bytes Fetch returned to clients (not followers), per topic",
                self.bytes_out,
            ),
        ):
            family = CounterMetricFamily(name, documentation, labels=["topic"])
            for topic, value in sorted(values.items()):
                family.add_metric([topic], value)
            yield family

    def _requests(self) -> Iterator[Metric]:
        requests = CounterMetricFamily("odradek_requests", "Requests handled, per API", labels=["api"])
        latency = HistogramMetricFamily(
            "odradek_request_latency_seconds",
            "Time from a request's arrival at the head of its connection's queue to its response written",
            labels=["api"],
        )
        for api_key, histogram in sorted(self.latencies.items()):
            api = _API_NAMES[api_key]
            requests.add_metric([api], histogram.count)
            latency.add_metric([api], histogram.cumulative_buckets(), histogram.total)
        yield requests
        yield latency
        unexpected = CounterMetricFamily(
            "odradek_unexpected_errors",
            "Unexpected exceptions in request handling, answered UNKNOWN_SERVER_ERROR (each logged with its "
            "traceback), per API",
            labels=["api"],
        )
        for api_key, count in sorted(self.services.unexpected_errors.items()):
            unexpected.add_metric([_API_NAMES.get(api_key, str(api_key))], count)
        yield unexpected


class _Histogram:
    """A fixed-bucket latency histogram: one bisect and two additions per observation, no locks."""

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.count = 0
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.count += 1
        self.total += seconds

    def cumulative_buckets(self) -> list[tuple[str, float]]:
        buckets = []
        running = 0
        for bound, count in zip((*LATENCY_BUCKETS, float("inf")), self.counts, strict=True):
            running += count
            buckets.append(("+Inf" if bound == float("inf") else repr(bound), float(running)))
        return buckets
