"""Replication quotas as Kafka 3.9's ReplicationQuotaManager: which replicas a topic's
leader/follower.replication.throttled.replicas throttle on this broker, and the byte rate of the
throttled replicas measured over replication.quota.window.num windows (Kafka's SimpleRate) against
the leader/follower.replication.throttled.rate bound."""

from __future__ import annotations

from odradek.cluster.replication.replication_quota import (
    UNLIMITED,
    ReplicationQuota,
    throttled_partitions,
)
from odradek.security.quota_rate import SimpleRate


def _quota(bound: int, broker_id: int = 1, samples: int = 11, window_seconds: int = 1) -> ReplicationQuota:
    return ReplicationQuota("leader", broker_id, samples, window_seconds, lambda: bound)


def test_only_the_replicas_listed_for_this_broker_are_throttled() -> None:
    listed = ("0:1", "0:2", "1:2", "3:1")
    assert throttled_partitions(listed, 1) == frozenset({0, 3})
    assert throttled_partitions(listed, 2) == frozenset({0, 1})
    assert throttled_partitions(listed, 3) == frozenset()
    quota = _quota(100, broker_id=2)
    assert quota.is_throttled(listed, 1)
    assert not quota.is_throttled(listed, 3)
    assert not quota.is_throttled((), 0)


def test_the_wildcard_throttles_every_partition_of_the_topic() -> None:
    quota = _quota(100, broker_id=7)
    assert throttled_partitions(("*",), 7) is None
    assert quota.is_throttled(("*",), 0) and quota.is_throttled(("*",), 99)
    assert quota.is_throttled((" * ",), 5)  # Kafka trims the value


def test_an_unparsable_list_throttles_nothing_rather_than_failing_a_fetch() -> None:
    # The topic config validator refuses these; one written into ZooKeeper by another tool must not
    # crash the fetch path.
    assert throttled_partitions(("x:1",), 1) == frozenset()
    assert throttled_partitions(("0-1",), 1) == frozenset()


def test_the_quota_is_exceeded_only_once_the_rate_is_over_the_bound() -> None:
    quota = _quota(1000)  # 1000 B/s over 11 windows of 1 s
    quota.record(900, now_ms=0)
    # SimpleRate: over at least one window, so 900 B in the first second is 900 B/s.
    assert not quota.is_quota_exceeded(now_ms=500)
    quota.record(200, now_ms=600)
    assert quota.is_quota_exceeded(now_ms=600)  # 1100 B over 1 s
    # The rate falls as time passes with nothing recorded: 1100 B over 1.2 s is under 1000 B/s.
    assert not quota.is_quota_exceeded(now_ms=1200)


def test_a_rate_is_measured_over_the_whole_sampled_window_not_one_window() -> None:
    rate = SimpleRate(samples=3, window_ms=1000)
    rate.record(3000, 0)
    assert rate.measure(1000) == 3000 / 1.0
    rate.record(0, 2500)
    # Three samples (the ring keeps samples + 1): from the oldest sample's start, 2.5 s.
    assert rate.measure(2500) == 3000 / 2.5
    # Samples older than samples * window are dropped.
    assert rate.measure(3000 + 100) == 0


def test_no_bound_never_throttles_and_a_changed_bound_applies_at_once() -> None:
    bound = [UNLIMITED]
    quota = ReplicationQuota("follower", 1, 11, 1, lambda: bound[0])
    quota.record(10**12, now_ms=0)
    assert not quota.is_quota_exceeded(now_ms=0)
    bound[0] = 1000
    assert quota.is_quota_exceeded(now_ms=0)
    bound[0] = 0  # Kafka accepts 0: every throttled replica stops once anything was recorded
    assert quota.is_quota_exceeded(now_ms=0)
    assert quota.upper_bound == 0


def test_recorded_bytes_and_throttled_partitions_are_counted_for_the_metrics() -> None:
    quota = _quota(1000)
    quota.record(400, now_ms=0)
    quota.record(100, now_ms=10)
    quota.count_throttled(3)
    assert quota.bytes_total == 500
    assert quota.throttled_total == 3
    assert quota.byte_rate(now_ms=10) == 500.0


class _CountingList(tuple[str, ...]):
    """A throttled-replicas list that counts how often it is read whole (hashed or compared)."""

    reads = 0

    def __hash__(self) -> int:
        type(self).reads += 1
        return super().__hash__()

    def __eq__(self, other: object) -> bool:
        type(self).reads += 1
        return super().__eq__(other)


def test_a_topics_throttled_replicas_list_is_not_read_whole_for_every_partition_of_every_fetch() -> None:
    """The partitions a topic's list names were cached by the list's value: each partition of each
    follower fetch hashed and compared the whole list (reassigning a topic of 1,000 partitions lists
    3,000 replicas: about 40 ms of the event loop per fetch, per side), where Kafka parses it once
    per config change."""
    listed = _CountingList(f"{partition}:{broker}" for partition in range(1000) for broker in (1, 2, 3))
    quota = ReplicationQuota("leader", 1, 11, 1, lambda: 1)
    assert quota.is_throttled(listed, 0)
    reads = _CountingList.reads
    for partition in range(1000):
        assert quota.is_throttled(listed, partition)
    assert _CountingList.reads == reads
