"""The Prometheus endpoint (`metrics.port`, off by default; on `metrics.host`, loopback by default):
what the broker is doing, by topic and API.

The hot path only bumps plain counters owned by the event loop: per topic bytes and messages in
(one call per appended partition, counting records from the batch headers storage already read),
bytes out to clients (one call per fetched partition; as Kafka's BytesOutPerSec, not to followers)
and per API request latencies (one call per request, into a fixed-bucket histogram). Everything
else — log sizes, under-replicated partitions, group count, open connections, unexpected errors
counted by the handlers — is read from the broker's state at scrape time. The HTTP endpoint is
served on the broker's own event loop, so a scrape sees a consistent state and needs no locks.

Hooks call through `active`, the recorder of the broker running in this process (None while no
endpoint is configured, which costs the hooks one attribute lookup).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from odradek.config.hosts import host_header_name, is_loopback
from odradek.protocol.api_keys import ApiKey
from odradek.security.client_quotas import now_ms

if TYPE_CHECKING:
    from odradek.config.broker import BrokerConfig
    from odradek.handlers._common.services import Services

log = logging.getLogger("odradek.metrics")

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
_MAX_HTTP_REQUEST: Final = 8192
_HTTP_TIMEOUT: Final = 5.0

#: The recorder of the broker in this process whose endpoint is on; the hooks report to it.
active: BrokerMetrics | None = None


async def start_endpoint(
    config: BrokerConfig, services: Services, connection_count: Callable[[], int]
) -> MetricsEndpoint | None:
    """The endpoint on `metrics.host`:`metrics.port`, or None when no port is set.

    Loopback unless `metrics.host` says otherwise: it answers anyone without authentication. (It was
    bound to the first listener's host, often every interface.)"""
    port = config.metrics_port
    if port is None or port <= 0:
        return None
    return await MetricsEndpoint(BrokerMetrics(services, connection_count)).start(config.metrics_host, port)


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
        yield from self._state()
        yield from self._client_quotas()
        yield from self._replication_quotas()
        yield from self._client_telemetry()

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

    def _state(self) -> Iterator[Metric]:
        services = self.services
        connections = GaugeMetricFamily("odradek_active_connections", "Open client connections")
        connections.add_metric([], self.connection_count())
        yield connections
        under_replicated = sum(
            1
            for topic in services.cluster.topics.values()
            for partition in topic.partitions
            if len(partition.isr) < len(partition.replicas)
        )
        yield GaugeMetricFamily(
            "odradek_under_replicated_partitions",
            "Partitions led here whose in-sync replica set is smaller than their replica set",
            value=under_replicated,
        )
        sizes = GaugeMetricFamily(
            "odradek_log_size_bytes", "Bytes in a partition's log segments", labels=["topic", "partition"]
        )
        for tp, partition_log in sorted(services.logs.logs.items()):
            sizes.add_metric([tp.topic, str(tp.partition)], partition_log.size_in_bytes)
        yield sizes
        yield from _fetch_sessions(services)
        groups = getattr(services, "groups", None)
        if groups is not None:
            _, listed = groups.list_groups(set(), set())
            yield GaugeMetricFamily(
                "odradek_groups", "Consumer groups this broker coordinates", value=len(listed)
            )

    def _client_quotas(self) -> Iterator[Metric]:
        """Per quota type and metric tags (Kafka's byte-rate / request-time and throttle-time sensors):
        the rate measured now, and the throttle time given. As Kafka, every client is measured while some
        quota of that type exists; a client silent for an hour is forgotten."""
        labels = ["quota", "user", "client_id"]
        rate = GaugeMetricFamily(
            "odradek_client_quota_rate",
            "A client's measured rate against its quota: bytes/s (produce, fetch) or % of a second (request)",
            labels=labels,
        )
        throttle = CounterMetricFamily(
            "odradek_client_quota_throttle_time_ms",
            "Throttle time given to clients over a quota",
            labels=labels,
        )
        throttled = CounterMetricFamily(
            "odradek_client_quota_throttled_responses", "Responses throttled for a quota", labels=labels
        )
        quotas = self.services.client_quotas
        now = now_ms()
        for name, manager in (
            ("produce", quotas.produce),
            ("fetch", quotas.fetch),
            ("request", quotas.request),
        ):
            for (user, client_id), sensor in sorted(manager.sensors.items()):
                values = [name, user, client_id]
                rate.add_metric(values, sensor.rate.measure(now))
                throttle.add_metric(values, sensor.throttle_ms_total)
                throttled.add_metric(values, sensor.throttled)
        yield rate
        yield throttle
        yield throttled

    def _replication_quotas(self) -> Iterator[Metric]:
        """Per side (leader, follower, alter-log-dirs), as Kafka's LeaderReplication /
        FollowerReplication / AlterLogDirsReplication byte-rate:
        the throttled replicas' rate measured now and its bound, the bytes recorded, and how many
        times a partition was held back."""
        labels = ["side"]
        rate = GaugeMetricFamily(
            "odradek_replication_quota_byte_rate", "Throttled replicas' measured bytes/s", labels=labels
        )
        bound = GaugeMetricFamily(
            "odradek_replication_quota_bound",
            "leader/follower.replication.throttled.rate or replica.alter.log.dirs.io.max.bytes.per.second "
            "in force, bytes/s",
            labels=labels,
        )
        recorded = CounterMetricFamily(
            "odradek_replication_quota_bytes", "Bytes of throttled replicas replicated", labels=labels
        )
        throttled = CounterMetricFamily(
            "odradek_replication_quota_throttled_partitions",
            "Partitions left out of a fetch (follower) or answered without records (leader) over the quota",
            labels=labels,
        )
        quotas = self.services.replication_quotas
        for quota in (quotas.leader, quotas.follower, quotas.alter_log_dirs):
            rate.add_metric([quota.side], quota.byte_rate())
            bound.add_metric([quota.side], quota.upper_bound)
            recorded.add_metric([quota.side], quota.bytes_total)
            throttled.add_metric([quota.side], quota.throttled_total)
        yield rate
        yield bound
        yield recorded
        yield throttled

    def _client_telemetry(self) -> Iterator[Metric]:
        """What clients push (KIP-714; Kafka hands it to a ClientTelemetry plugin): the data points of
        each client instance's latest push, bounded by the manager and gone with the instance."""
        manager = self.services.client_metrics
        manager.expire(now_ms())
        instances = manager.instances()
        yield GaugeMetricFamily(
            "odradek_client_telemetry_instances",
            "Client instances that asked for telemetry subscriptions and have not expired",
            value=len(instances),
        )
        refused = CounterMetricFamily(
            "odradek_client_telemetry_refused",
            "GetTelemetrySubscriptions and PushTelemetry refused, by error (throttled, unknown "
            "subscription, ...)",
            labels=["error"],
        )
        for error, count in sorted(manager.refusals.items()):
            refused.add_metric([error.name.lower()], count)
        yield refused
        pushed = GaugeMetricFamily(
            "odradek_client_telemetry_metric",
            "A metric a client pushed (the latest value; sums are cumulative), per client instance",
            labels=["client_instance_id", "client_id", "metric", "attributes"],
        )
        for instance in instances:
            ids = [str(instance.client_instance_id), instance.client.client_id or ""]
            for point in instance.points:
                attributes = ",".join(f"{key}={value}" for key, value in point.attributes)
                pushed.add_metric([*ids, point.name, attributes], point.value)
        yield pushed


def endpoint_url(config: BrokerConfig, endpoint: MetricsEndpoint | None) -> str | None:
    """Where the console reads the metrics clients push: this broker's endpoint, if it has one."""
    if endpoint is None:
        return None
    host = config.metrics_host
    host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host  # bound everywhere: reach it here
    return f"http://{f'[{host}]' if ':' in host else host}:{endpoint.port}/metrics"


class MetricsEndpoint:
    """The HTTP listener serving `GET /metrics` in Prometheus' text format, on the broker's loop."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self.metrics = metrics
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(metrics)
        self.registry.register(ProcessCollector(registry=None))
        self.server: asyncio.Server | None = None
        self.loopback_only = True

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> MetricsEndpoint:
        global active
        self.loopback_only = is_loopback(host)
        self.server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        active = self.metrics
        self.metrics.services.traffic = self.metrics
        log.info("metrics endpoint listening", extra={"fields": {"host": host, "port": self.port}})
        return self

    def _serves_host(self, head: bytes) -> bool:
        """Bound to loopback, only requests naming a loopback host: a web page whose name an attacker
        rebinds to 127.0.0.1 (DNS rebinding) reads what it fetches, and only its Host header gives it
        away. Bound beyond loopback, it answers whoever reaches it, as the operator chose."""
        if not self.loopback_only:
            return True
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"host":
                return is_loopback(host_header_name(value.decode("latin-1")))
        return False

    def close(self) -> None:
        global active
        if active is self.metrics:
            active = None
        if self.metrics.services.traffic is self.metrics:
            self.metrics.services.traffic = None
        if self.server is not None:
            self.server.close()
            self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HTTP_TIMEOUT)
            request_line = head.split(b"\r\n", 1)[0].split()
            if not self._serves_host(head):
                _answer(writer, b"421 Misdirected Request", b"text/plain", b"not a host served here\n")
            elif len(request_line) < 2 or request_line[0] not in (b"GET", b"HEAD"):
                _answer(writer, b"405 Method Not Allowed", b"text/plain", b"GET /metrics only\n")
            elif request_line[1].split(b"?", 1)[0] not in (b"/metrics", b"/"):
                _answer(writer, b"404 Not Found", b"text/plain", b"see /metrics\n")
            else:
                body = generate_latest(self.registry)
                if request_line[0] == b"HEAD":
                    body = b""
                _answer(writer, b"200 OK", CONTENT_TYPE_LATEST.encode(), body)
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


def _answer(writer: asyncio.StreamWriter, status: bytes, content_type: bytes, body: bytes) -> None:
    writer.write(
        b"HTTP/1.1 "
        + status
        + b"\r\nContent-Type: "
        + content_type
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n"
        + body
    )


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


def _fetch_sessions(services: Services) -> Iterator[Metric]:
    """Kafka's FetchSessionCache NumIncrementalFetchSessions and NumIncrementalFetchPartitionsCached,
    by who fetches (followers' sessions are privileged)."""
    sessions = GaugeMetricFamily(
        "odradek_incremental_fetch_sessions", "Incremental fetch sessions kept", labels=["fetcher"]
    )
    partitions = GaugeMetricFamily(
        "odradek_incremental_fetch_partitions_cached",
        "Partitions held in incremental fetch sessions",
        labels=["fetcher"],
    )
    for fetcher, privileged in (("follower", True), ("consumer", False)):
        kept = [s for s in services.fetch_sessions.sessions.values() if s.privileged is privileged]
        sessions.add_metric([fetcher], len(kept))
        partitions.add_metric([fetcher], sum(len(s.partitions) for s in kept))
    yield sessions
    yield partitions
