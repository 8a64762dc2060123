"""Samples the cluster every few seconds into `History`: what the charts and the messages/s columns show.

Throughput comes from the Kafka protocol alone, so it works against any Kafka-compatible broker:
- messages in/s: growth of the partitions' log end offsets (ListOffsets latest);
- bytes in/s: growth of the partitions' sizes on disk (DescribeLogDirs), a shrinking log (retention,
  compaction) counting as zero;
- bytes out/s, consumed by groups: growth of the groups' committed offsets times the partition's
  average message size on disk. Fetches that commit nothing (the console's own browser, consumers
  without a group) are not seen; a broker's own metrics would, the Kafka protocol does not tell.
Lag: per consumer group, the sum and each partition's of (log end offset - committed offset).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from odradek.cli.client import Admin
from odradek.cli.group_offsets import Partition
from odradek.console.data.cluster import BrokerMemory, cluster_state
from odradek.console.data.config_cache import SummaryConfigCache
from odradek.console.data.groups import group_lag, list_groups
from odradek.console.data.log_dirs import describe_log_dirs
from odradek.console.data.offsets import log_end_offsets
from odradek.console.data.session import ClusterError, Session
from odradek.console.history import History, rate

log = logging.getLogger("odradek.console")

BYTES_IN = "cluster.bytes_in"
BYTES_OUT = "cluster.bytes_out"
MESSAGES_IN = "cluster.messages_in"


def topic_messages_in(topic: str) -> str:
    return f"topic.messages_in.{topic}"


def group_total_lag(group: str) -> str:
    return f"group.lag.{group}"


def group_partition_lag(group: str, topic: str, partition: int) -> str:
    return f"group.partition_lag.{group}\0{topic}\0{partition}"


@dataclass
class _Sample:
    time: float
    ends: dict[Partition, int] = field(default_factory=dict)
    sizes: dict[Partition, int] = field(default_factory=dict)
    committed: dict[tuple[str, Partition], int] = field(default_factory=dict)


class Sampler:
    def __init__(
        self, session: Session, history: History, memory: BrokerMemory, topic_configs: SummaryConfigCache
    ) -> None:
        self.session = session
        self.topic_configs = topic_configs
        self.history = history
        self.memory = memory
        self.last_error: str | None = None
        self._previous: _Sample | None = None

    async def run(self, interval: float) -> None:
        """Sample forever, one sample at a time, each in a worker thread (the client is blocking)."""
        while True:
            started = time.monotonic()
            try:
                await asyncio.to_thread(self.sample)
                self.last_error = None
            except ClusterError as error:
                if error.message != self.last_error:
                    log.warning("console: sampling the cluster failed: %s", error.message)
                self.last_error = error.message
            await asyncio.sleep(max(0.1, interval - (time.monotonic() - started)))

    def sample(self) -> None:
        self.session.run(self._sample)

    def _sample(self, admin: Admin) -> None:
        state = cluster_state(admin, self.memory)
        self.topic_configs.get(admin, list(state.topics))  # keeps the pages' copy fresh
        partitions = [(p.topic, p.partition) for p in state.partitions]
        current = _Sample(time.time())
        current.ends = {p: end for p, end in log_end_offsets(admin, partitions).items() if end >= 0}
        current.sizes = describe_log_dirs(admin, state.brokers).partition_sizes()
        lags: dict[str, list[tuple[Partition, int | None]]] = {}
        for listing in list_groups(admin):
            rows = group_lag(admin, listing.group_id)
            lags[listing.group_id] = [((row.topic, row.partition), row.lag) for row in rows]
            for row in rows:
                if row.committed_offset is not None:
                    current.committed[(listing.group_id, (row.topic, row.partition))] = row.committed_offset
        self._record(current, lags)
        self._previous = current

    def _record(self, current: _Sample, lags: dict[str, list[tuple[Partition, int | None]]]) -> None:
        now = current.time
        for group, rows in lags.items():
            self.history.add(group_total_lag(group), now, sum(lag or 0 for _, lag in rows))
            for (topic, partition), lag in rows:
                if lag is not None:
                    self.history.add(group_partition_lag(group, topic, partition), now, lag)
        previous = self._previous
        if previous is None:
            return
        seconds = now - previous.time
        self.history.add(MESSAGES_IN, now, rate(_keyed(previous.ends), _keyed(current.ends), seconds))
        self.history.add(BYTES_IN, now, rate(_keyed(previous.sizes), _keyed(current.sizes), seconds))
        self.history.add(BYTES_OUT, now, _bytes_consumed(previous, current) / seconds if seconds > 0 else 0)
        before, after = _by_topic(previous.ends), _by_topic(current.ends)
        for topic, ends in after.items():
            self.history.add(topic_messages_in(topic), now, rate(before.get(topic, {}), ends, seconds))


def _keyed(values: dict[Partition, int]) -> dict[str, int]:
    return {f"{topic}\0{partition}": value for (topic, partition), value in values.items()}


def _by_topic(values: dict[Partition, int]) -> dict[str, dict[str, int]]:
    topics: dict[str, dict[str, int]] = {}
    for (topic, partition), value in values.items():
        topics.setdefault(topic, {})[str(partition)] = value
    return topics


def _bytes_consumed(previous: _Sample, current: _Sample) -> float:
    """Committed-offset growth of every group, in bytes at each partition's average message size."""
    consumed = 0.0
    for key, offset in current.committed.items():
        before = previous.committed.get(key)
        _, partition = key
        end, size = current.ends.get(partition), current.sizes.get(partition)
        if before is None or offset <= before or not end or size is None:
            continue
        consumed += (offset - before) * size / end
    return consumed
