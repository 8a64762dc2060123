"""Replication quotas: the throttles `kafka-reassign-partitions --throttle` sets (Kafka's
ReplicationQuotaManager, one for the leader side and one for the follower side).

Which replicas are throttled is a topic config, `leader.replication.throttled.replicas` or
`follower.replication.throttled.replicas`: `partition:broker` pairs, or `*` for every replica of the
topic; a broker throttles the partitions listed with its own id. How much is a broker config,
`leader.replication.throttled.rate` or `follower.replication.throttled.rate` (bytes per second, per
broker or as the cluster-wide default, changed at run time). The bytes of every throttled partition,
in sync or not, are recorded on one rate per side (Kafka's SimpleRate over
`replication.quota.window.num` windows of `replication.quota.window.size.seconds`); once that rate is
over the bound, the throttled partitions whose replica is not in sync are left out:
- at the leader (handlers/fetch.py): a follower's fetch gets them without records, and they do not
  count towards its min_bytes (Kafka's ReplicaManager.shouldLeaderThrottle, in sync meaning in the ISR);
- at the follower (replica_fetcher.py): they are left out of its fetch (Kafka's
  shouldFollowerThrottle, in sync meaning the last answer found its log end at the leader's high
  watermark), and a fetch with nothing left waits `replica.fetch.backoff.ms`.
Replicas in sync are never held back (that would shrink the ISR), only counted.

The third quota is on moves between a broker's log dirs (Kafka's alterLogDirs ReplicationQuotaManager):
every byte copied into a future log is recorded on it, and while its rate is over
`replica.alter.log.dirs.io.max.bytes.per.second` no copy step starts (server/log_dir_moves.py); its
windows are `alter.log.dirs.replication.quota.window.*`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from odradek.config.broker import BrokerConfig
from odradek.config.types import LONG_MAX
from odradek.security.quota_rate import SimpleRate

#: The rate configs' default: no bound, nothing is ever held back.
UNLIMITED: Final = LONG_MAX
ALL_REPLICAS: Final = "*"
_PAIR = re.compile(r"([0-9]+):([0-9]+)")


class ReplicationQuota:
    """One side's quota: the rate of the throttled replicas' bytes against the bound `bound()` reads
    from the live configuration (so a dynamic change applies to the next check)."""

    def __init__(
        self, side: str, broker_id: int, samples: int, window_seconds: int, bound: Callable[[], int]
    ) -> None:
        self.side = side
        self.broker_id = broker_id
        self._bound = bound
        self._rate = SimpleRate(samples, window_seconds * 1000)
        #: For the metrics: every throttled byte recorded, and every partition held back.
        self.bytes_total = 0
        self.throttled_total = 0

    @property
    def upper_bound(self) -> int:
        return self._bound()

    def is_throttled(self, replicas: tuple[str, ...], partition: int) -> bool:
        """Whether a topic whose throttled-replicas config is `replicas` throttles `partition` here."""
        if not replicas:
            return False
        partitions = throttled_partitions(replicas, self.broker_id)
        return partitions is None or partition in partitions

    def record(self, size: int, now_ms: int | None = None) -> None:
        """Bytes of throttled partitions moved (recorded even over the bound, as Kafka's)."""
        self._rate.record(size, _now_ms() if now_ms is None else now_ms)
        self.bytes_total += size

    def is_quota_exceeded(self, now_ms: int | None = None) -> bool:
        bound = self._bound()
        if bound >= UNLIMITED:
            return False
        return self._rate.measure(_now_ms() if now_ms is None else now_ms) > bound

    def count_throttled(self, partitions: int) -> None:
        self.throttled_total += partitions

    def byte_rate(self, now_ms: int | None = None) -> float:
        """The measured rate of the throttled replicas (Kafka's `byte-rate` metric of this side)."""
        return self._rate.measure(_now_ms() if now_ms is None else now_ms)


@dataclass(frozen=True, slots=True)
class ReplicationQuotas:
    """A broker's replication quotas (Kafka's QuotaManagers.leader, .follower and .alterLogDirs)."""

    leader: ReplicationQuota
    follower: ReplicationQuota
    alter_log_dirs: ReplicationQuota = field(default_factory=lambda: _unlimited("alter-log-dirs"))

    @classmethod
    def of(cls, broker_id: int, config: Callable[[], BrokerConfig]) -> ReplicationQuotas:
        """The quotas over the windows of the broker's configuration, against the rates of its live
        configuration (per broker over the cluster-wide default, as Kafka's BrokerConfigHandler)."""
        samples, seconds = (
            config().replication_quota_window_num,
            config().replication_quota_window_size_seconds,
        )
        return cls(
            ReplicationQuota(
                "leader", broker_id, samples, seconds, lambda: config().leader_replication_throttled_rate
            ),
            ReplicationQuota(
                "follower", broker_id, samples, seconds, lambda: config().follower_replication_throttled_rate
            ),
            ReplicationQuota(
                "alter-log-dirs",
                broker_id,
                config().alter_log_dirs_replication_quota_window_num,
                config().alter_log_dirs_replication_quota_window_size_seconds,
                lambda: config().replica_alter_log_dirs_io_max_bytes_per_second,
            ),
        )

    @classmethod
    def unbounded(cls) -> ReplicationQuotas:
        """Quotas that never hold anything back (a single node, handler tests)."""
        return cls(_unlimited("leader"), _unlimited("follower"), _unlimited("alter-log-dirs"))


#: Parsed lists by the identity of the LogConfig's own tuple (kept here, so its id is not reused):
#: hashing or comparing the list by value would read all of it for each partition of each fetch.
_parsed: dict[tuple[int, int], tuple[tuple[str, ...], frozenset[int] | None]] = {}
_PARSED_MAX: Final = 256


def throttled_partitions(replicas: tuple[str, ...], broker_id: int) -> frozenset[int] | None:
    """The partitions a throttled-replicas list names for `broker_id`; None for `*` (all of them)."""
    key = (id(replicas), broker_id)
    cached = _parsed.get(key)
    if cached is not None and cached[0] is replicas:
        return cached[1]
    partitions = _parse(replicas, broker_id)
    if len(_parsed) >= _PARSED_MAX:
        del _parsed[next(iter(_parsed))]  # the oldest
    _parsed[key] = (replicas, partitions)
    return partitions


def _parse(replicas: tuple[str, ...], broker_id: int) -> frozenset[int] | None:
    """Kafka's TopicConfigHandler.parseThrottledPartitions; an entry that is not `partition:broker`
    (refused by the config's validator, but another tool may write ZooKeeper) throttles nothing."""
    entries = [entry.strip() for entry in replicas]
    if "".join(entries) == ALL_REPLICAS:
        return None
    partitions = set()
    for entry in entries:
        pair = _PAIR.fullmatch(entry)
        if pair is not None and int(pair.group(2)) == broker_id:
            partitions.add(int(pair.group(1)))
    return frozenset(partitions)


def _unlimited(side: str) -> ReplicationQuota:
    return ReplicationQuota(side, -1, 11, 1, lambda: UNLIMITED)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)
