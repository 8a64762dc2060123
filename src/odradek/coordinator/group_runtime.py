"""The group coordinator's runtime over `__consumer_offsets`: group shards with their timers, written
through CoordinatorResults.

Like Kafka's CoordinatorRuntime, every group step returns a CoordinatorResult; `write` appends its
records to the shard's partition (one atomic append) and only then replays them and runs the step's
callback, so the state a client is told about is always in the log. TxnOffsetCommit records are
appended in a transactional batch of the producer (`write_transactional`) and held in the shard per
producer id; the COMMIT or ABORT marker the transaction coordinator writes to the partition applies or
drops them, on the live path and again on replay.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from odradek.coordinator.records import CoordinatorRecord
from odradek.coordinator.result import CoordinatorResult
from odradek.coordinator.runtime import CoordinatorRuntime, PartitionState, append_error_code
from odradek.coordinator.settings import OFFSETS_TOPIC, GroupSettings
from odradek.coordinator.shard import GroupShard
from odradek.coordinator.timer import CoordinatorTimer, Operation, Runner
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records import Compression

log = logging.getLogger("odradek.coordinator")

T = TypeVar("T")


class GroupRuntime(CoordinatorRuntime[GroupShard]):
    """`__consumer_offsets`: group shards, with timers, written through CoordinatorResults."""

    def __init__(
        self,
        settings: GroupSettings,
        logs: Any,
        cluster: Any,
        node_id: int,
        notify_append: Callable[[Hashable], None] | None = None,
        clock: Callable[[], float] = time.time,
        timer_factory: Callable[[Runner], CoordinatorTimer] = CoordinatorTimer,
    ) -> None:
        super().__init__(
            OFFSETS_TOPIC,
            "groups",
            settings.offsets_topic_num_partitions,
            settings.offsets_load_buffer_size,
            Compression(settings.offsets_topic_compression_codec),
            logs,
            cluster,
            node_id,
            notify_append,
            clock,
        )
        self.settings = settings
        self.timer_factory = timer_factory

    def new_shard(self, partition: int) -> GroupShard:
        timer = self.timer_factory(lambda key, operation: self.run_timer(partition, key, operation))
        return GroupShard(partition, self.settings, timer, self.now_ms, self.cluster)

    def write(self, shard: GroupShard, result: CoordinatorResult[T] | None) -> ErrorCode | None:
        """Append `result`'s records; on success replay them (if asked); tell its callback either way."""
        if result is None:
            return None
        error: ErrorCode | None = None
        if result.records:
            try:
                self.append_records(shard.partition, result.records)
            except Exception as failure:
                error = append_error_code(failure)
                log.warning(
                    "writing %d records to %s-%d failed: %s",
                    len(result.records),
                    OFFSETS_TOPIC,
                    shard.partition,
                    failure,
                )
            if error is None and result.replay:
                for record in result.records:
                    shard.replay(record)
        if result.on_appended is not None:
            result.on_appended(error)
        return error

    def write_transactional(
        self, shard: GroupShard, records: list[CoordinatorRecord], producer_id: int, producer_epoch: int
    ) -> ErrorCode | None:
        """Append TxnOffsetCommit records in a transactional batch of the producer; they wait in the
        shard until the transaction's marker is written to this partition."""
        try:
            self.append_records(shard.partition, records, producer_id, producer_epoch)
        except Exception as failure:
            log.warning(
                "writing transactional offsets to %s-%d failed: %s", OFFSETS_TOPIC, shard.partition, failure
            )
            return append_error_code(failure)
        for record in records:
            shard.replay_transactional(producer_id, record)
        return None

    def run_timer(self, partition: int, key: str, operation: Operation) -> None:
        shard = self.shards.get(partition)
        if shard is None or self.states.get(partition) is not PartitionState.ACTIVE:
            return
        self.write(shard, operation())
