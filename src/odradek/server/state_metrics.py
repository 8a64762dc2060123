"""What the metrics endpoint reads from the broker's state at scrape time, as Kafka's sensors name it:
open connections, under-replicated partitions, log sizes, fetch sessions (FetchSessionCache), groups,
client quotas (byte-rate / request-time and throttle-time), replication quotas
(LeaderReplication / FollowerReplication / AlterLogDirsReplication) and client telemetry (KIP-714).
Nothing here is on the request path; the scrape runs on the broker's loop, so it needs no locks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from odradek.handlers._common.services import Services
from odradek.security.client_quotas import now_ms


def collect(services: Services, connection_count: Callable[[], int]) -> Iterator[Metric]:
    yield from _state(services, connection_count)
    yield from _client_quotas(services)
    yield from _replication_quotas(services)
    yield from _client_telemetry(services)


def _state(services: Services, connection_count: Callable[[], int]) -> Iterator[Metric]:
    connections = GaugeMetricFamily("odradek_active_connections", "Open client connections")
    connections.add_metric([], connection_count())
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


def _client_quotas(services: Services) -> Iterator[Metric]:
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
    quotas = services.client_quotas
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


def _replication_quotas(services: Services) -> Iterator[Metric]:
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
    quotas = services.replication_quotas
    for quota in (quotas.leader, quotas.follower, quotas.alter_log_dirs):
        rate.add_metric([quota.side], quota.byte_rate())
        bound.add_metric([quota.side], quota.upper_bound)
        recorded.add_metric([quota.side], quota.bytes_total)
        throttled.add_metric([quota.side], quota.throttled_total)
    yield rate
    yield bound
    yield recorded
    yield throttled


def _client_telemetry(services: Services) -> Iterator[Metric]:
    """What clients push (KIP-714; Kafka hands it to a ClientTelemetry plugin): the data points of
    each client instance's latest push, bounded by the manager and gone with the instance."""
    manager = services.client_metrics
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
