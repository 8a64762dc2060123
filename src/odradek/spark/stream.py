"""Micro-batch streaming reads, as Spark's KafkaMicroBatchStream does them.

Offsets in the checkpoint are Spark's JSON, `{"topic": {"0": 42}}`: the next offset to read per
partition. A batch's ranges are a pure function of its (start, end) offsets, so a batch that Spark
replays after a crash reads exactly the same records: no gap, no duplicate.

- Partitions that appear later (more partitions, or new topics matching `subscribePattern`) start at
  their earliest offset.
- `maxOffsetsPerTrigger` caps a batch (shared across partitions in proportion to their backlog);
  `minOffsetsPerTrigger` waits for enough records, but never longer than `maxTriggerDelay`.
- `Trigger.AvailableNow` reads up to the latest offsets seen when the query starts.
- Offsets that are gone (retention, deleted partitions) fail the query unless `failOnDataLoss=false`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from odradek.spark.consumer_read import DataLossError, data_loss_message
from odradek.spark.offset_reader import OffsetReader
from odradek.spark.offsets import TopicPartition, offsets_from_dict, offsets_to_dict
from odradek.spark.options import SourceOptions
from odradek.spark.range_read import read_range
from odradek.spark.ranges import OffsetRange, plan_ranges, rate_limit

log = logging.getLogger(__name__)


class StreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._offset_reader: OffsetReader | None = None
        self._available_now: dict[TopicPartition, int] | None = None
        self._latest: dict[TopicPartition, int] | None = None
        self._last_batch_at = time.monotonic()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_offset_reader"] = None
        return state

    @property
    def offset_reader(self) -> OffsetReader:
        if self._offset_reader is None:
            self._offset_reader = OffsetReader(self.options)
        return self._offset_reader

    def initialOffset(self) -> dict[str, Any]:
        partitions = self.offset_reader.topic_partitions()
        return offsets_to_dict(self.offset_reader.resolve(self.options.starting, partitions, is_start=True))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self.offset_reader.latest(self.offset_reader.topic_partitions())

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        start_offsets = offsets_from_dict(start)
        if self._available_now is not None:
            latest = dict(self._available_now)
        else:
            latest = self.offset_reader.latest(self.offset_reader.topic_partitions())
        self._latest = latest
        new = [tp for tp in latest if tp not in start_offsets]
        base = {tp: start_offsets[tp] for tp in latest if tp in start_offsets}
        base.update(self.offset_reader.earliest(new))
        latest = {tp: max(offset, base[tp]) for tp, offset in latest.items()}
        available = sum(latest[tp] - base[tp] for tp in latest)
        if not isinstance(limit, ReadAllAvailable) and self._waits_for_more(available):
            return start
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(base, latest, limit.max_rows)
        else:
            end = latest
        if end != start_offsets:
            self._last_batch_at = time.monotonic()
        return offsets_to_dict(end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return offsets_to_dict(self._latest) if self._latest is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        start_offsets = offsets_from_dict(start)
        end_offsets = offsets_from_dict(end)
        deleted = sorted(set(start_offsets) - set(end_offsets))
        if deleted:
            self._report_data_loss(f"{', '.join(f'{t}-{p}' for t, p in deleted)} are gone")
        new = [tp for tp in end_offsets if tp not in start_offsets]
        froms = {tp: start_offsets[tp] for tp in end_offsets if tp in start_offsets}
        for tp, offset in self.offset_reader.earliest(new).items():
            if offset != 0:
                self._report_data_loss(
                    f"Added partition {tp[0]}-{tp[1]} starts from {offset} instead of 0. "
                    "Some data may have been missed"
                )
            froms[tp] = offset
        for tp, until in end_offsets.items():
            if until < froms[tp]:
                self._report_data_loss(
                    f"Partition {tp[0]}-{tp[1]}'s offset was changed from {froms[tp]} to {until}, "
                    "some data may have been missed"
                )
                froms[tp] = until
        ranges = plan_ranges(
            froms,
            end_offsets,
            min_partitions=self.options.min_partitions,
            max_records_per_partition=self.options.max_records_per_partition,
        )
        return list(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, OffsetRange):
            yield from read_range(partition, self.options)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: the checkpoint is Spark's; no consumer-group offsets are committed."""

    def stop(self) -> None:
        if self._offset_reader is not None:
            self._offset_reader.close()
            self._offset_reader = None

    def _waits_for_more(self, available: int) -> bool:
        """minOffsetsPerTrigger: skip this trigger while too little is available, up to maxTriggerDelay."""
        minimum = self.options.min_offsets_per_trigger
        if minimum is None or self._available_now is not None or available >= minimum:
            return False
        waited_ms = (time.monotonic() - self._last_batch_at) * 1000
        return waited_ms < self.options.max_trigger_delay_ms

    def _report_data_loss(self, detail: str) -> None:
        if self.options.fail_on_data_loss:
            raise DataLossError(data_loss_message(detail))
        log.warning("%s (failOnDataLoss=false: going on)", detail)
