"""One share group's view of one partition, on its leader (KIP-932's SharePartition).

Records from the share-partition start offset (SPSO) up to the end offset (SPEO, the next offset never
acquired) are "in flight", each AVAILABLE, ACQUIRED (by one member, under a lock that times out),
ACKNOWLEDGED or ARCHIVED, with how often it was delivered. A fetch acquires available records (and
new ones past the SPEO) for one member; an acknowledgement accepts (ACKNOWLEDGED), releases
(AVAILABLE again) or rejects (ARCHIVED) them; a lock that times out, or a member that goes, releases
them. A record delivered `delivery_count_limit` times is archived rather than made available again.
The SPSO moves past the leading acknowledged and archived records, which are then forgotten.

Every change but an acquisition is written to the share coordinator (`SharePersister.write`) before
it takes effect: an acknowledgement is answered only once its write is durable, and a failed write
changes nothing. Acquisitions are not written, as in Kafka: a new leader makes them available again;
so a timed-out lock's release is applied even when its write fails (as Kafka 4.4's).
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
import logging
from collections.abc import Collection, Iterable

from odradek.partition.share.in_flight import (
    DELIVERY_COMPLETE,
    AcknowledgementBatch,
    AcknowledgeType,
    Acquired,
    InFlight,
    ShareLimits,
    extend_acquired,
    state_batches,
)
from odradek.partition.share.log_reader import LogChunk
from odradek.partition.share.persister import (
    DeliveryState,
    SharePartitionKey,
    SharePersister,
    ShareState,
    ShareStateError,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger("odradek.partition.share")


class SharePartition:
    def __init__(
        self,
        key: SharePartitionKey,
        persister: SharePersister,
        limits: ShareLimits,
        leader_epoch: int,
        state: ShareState,
        *,
        read_committed: bool = False,
    ) -> None:
        self.key = key
        self.persister = persister
        self.limits = limits
        self.leader_epoch = leader_epoch
        self.state_epoch = state.state_epoch
        self.read_committed = read_committed
        self.start_offset = state.start_offset
        self.end_offset = state.start_offset
        self.records: dict[int, InFlight] = {}
        for batch in state.batches:
            for offset in range(max(batch.first_offset, self.start_offset), batch.last_offset + 1):
                self.records[offset] = InFlight(batch.delivery_state, batch.delivery_count)
            self.end_offset = max(self.end_offset, batch.last_offset + 1)
        self._move_start_offset()
        #: A write was fenced (offsets altered, or a newer leader), or the copy was closed (replaced at
        #: a new leader epoch, or no longer led here): this copy of the state is stale.
        self.fenced = False
        self._lock = asyncio.Lock()
        self._acquisitions = itertools.count(1)
        self._timers: dict[int, asyncio.TimerHandle] = {}
        #: Releases of timed-out locks under way (kept so that they are not collected mid-way).
        self._releases: set[asyncio.Future[None]] = set()

    # ----- fetching --------------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """Where a fetch reads from: the first available record in flight, else the end offset."""
        available = [o for o, r in self.records.items() if r.state is DeliveryState.AVAILABLE]
        return min(available) if available else self.end_offset

    def can_acquire(self) -> bool:
        """Whether a fetch may acquire anything: an available record, or room for new ones."""
        if any(r.state is DeliveryState.AVAILABLE for r in self.records.values()):
            return True
        return self.end_offset - self.start_offset < self.limits.max_record_locks

    async def acquire(
        self, member_id: str, chunk: LogChunk, max_records: int, *, record_limit: bool = False
    ) -> list[Acquired]:
        """Acquire for `member_id` the available and new records of `chunk` (whole batches, until
        `max_records` are acquired or the in-flight limit is reached; with `record_limit`, KIP-1206's
        mode, never more than `max_records`, a batch split if need be), under a fresh lock."""
        async with self._lock:
            if self.fenced:
                # replaced by a newer copy while this fetch waited for the lock (a leader epoch moved,
                # or a write was fenced): what this copy thinks available may be the new copy's
                # already, acknowledged even. As Kafka 4.4's SharePartition, a fenced one acquires
                # nothing; the fetch's next round asks the manager for the current copy.
                return []
            acquisition = next(self._acquisitions)
            acquired: list[Acquired] = []
            count = 0
            for batch in chunk.batches:
                if count >= max_records:
                    break
                if batch.base_offset > self.end_offset:
                    self.end_offset = batch.base_offset  # offsets compacted away: nothing to deliver
                    self._move_start_offset()  # over the gap too, if nothing before it is in flight
                for offset in range(max(batch.base_offset, self.start_offset), batch.last_offset + 1):
                    if record_limit and count >= max_records:
                        break
                    record = self.records.get(offset)
                    if offset >= self.end_offset:
                        if self.end_offset - self.start_offset >= self.limits.max_record_locks:
                            break
                        self.end_offset = offset + 1
                        if not batch.deliverable:
                            self.records[offset] = InFlight(DeliveryState.ARCHIVED, 0)
                            continue
                        record = self.records[offset] = InFlight(DeliveryState.AVAILABLE, 0)
                    if record is None or record.state is not DeliveryState.AVAILABLE:
                        continue
                    record.state = DeliveryState.ACQUIRED
                    record.delivery_count += 1
                    record.member_id = member_id
                    record.acquisition = acquisition
                    count += 1
                    extend_acquired(acquired, offset, record.delivery_count)
            self._move_start_offset()
            if acquired:
                self._start_lock(acquisition)
            return acquired

    async def log_start_moved(self, log_start_offset: int) -> None:
        """Records before `log_start_offset` were deleted from the log (retention, DeleteRecords), so a
        read from where this copy would fetch is out of range: as Kafka 4.4's updateCacheAndOffsets,
        the available ones are archived (not written: the start offset is, with the next change) and
        fetching goes on from the log start. Records members hold stay theirs to acknowledge."""
        async with self._lock:
            if log_start_offset <= self.start_offset:
                return
            for offset, record in self.records.items():
                if offset < log_start_offset and record.state is DeliveryState.AVAILABLE:
                    record.state = DeliveryState.ARCHIVED
            self.end_offset = max(self.end_offset, log_start_offset)
            self._move_start_offset()

    # ----- acknowledging and releasing -------------------------------------------------------------

    async def acknowledge(self, member_id: str, batches: Iterable[AcknowledgementBatch]) -> None:
        """Apply a member's acknowledgements once written; INVALID_RECORD_STATE (and nothing changed)
        if any names a record the member has not acquired, or one twice, INVALID_REQUEST a type it
        does not know. Renewed records (RENEW) stay the member's under a fresh lock: nothing written,
        as in Kafka (acquisitions are not)."""
        async with self._lock:
            changes: dict[int, DeliveryState] = {}
            renewed: set[int] = set()
            tracked = sorted(self.records)
            for batch in batches:
                types = batch.types
                if not types or batch.last_offset < batch.first_offset:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Empty acknowledgement batch.")
                if len(types) not in (1, batch.last_offset - batch.first_offset + 1):
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Acknowledge types do not match the offsets.")
                if any(kind not in AcknowledgeType._value2member_map_ for kind in types):
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Unknown acknowledge type.")
                # Only records in flight can be acknowledged: checked before walking the range, which a
                # client chooses (a range of 2**62 offsets must not cost 2**62 steps).
                if batch.first_offset < self.start_offset or batch.last_offset >= self.end_offset:
                    raise KafkaError(
                        ErrorCode.INVALID_RECORD_STATE,
                        f"Offsets {batch.first_offset}-{batch.last_offset} are not all in flight "
                        f"({self.start_offset}-{self.end_offset - 1}).",
                    )
                for offset, kind in self._offsets_and_types(batch, tracked):
                    if offset in changes or offset in renewed:
                        raise KafkaError(
                            ErrorCode.INVALID_RECORD_STATE,
                            f"The record at offset {offset} is acknowledged twice.",
                        )
                    if kind == AcknowledgeType.RENEW:
                        self._held(member_id, offset)
                        renewed.add(offset)
                    elif kind == AcknowledgeType.GAP and offset not in self.records:
                        continue  # no record tracked there (compacted away between batches): nothing to do
                    else:
                        changes[offset] = self._acknowledged(member_id, offset, kind)
            await self._write_and_apply(changes)
            if renewed:
                self._renew(renewed)

    def _offsets_and_types(
        self, batch: AcknowledgementBatch, tracked: list[int]
    ) -> Iterable[tuple[int, int]]:
        """Each offset of an acknowledgement batch with its type. One type for the whole range: only the
        offsets tracked in flight (`tracked`, sorted), since the range is the client's and may span a
        compaction gap of 10**15 offsets; any type but GAP over an offset with no record is refused."""
        first, last, types = batch.first_offset, batch.last_offset, batch.types
        if len(types) > 1:
            return zip(range(first, last + 1), types, strict=True)  # as long as the request itself
        kind = types[0]
        present = tracked[bisect.bisect_left(tracked, first) : bisect.bisect_right(tracked, last)]
        if kind != AcknowledgeType.GAP and len(present) != last - first + 1:
            # the first offset of the range with no record: within len(present) + 1 steps
            offsets = range(first, last + 1)
            missing = next(o for o, p in zip(offsets, [*present, None], strict=False) if o != p)
            raise KafkaError(
                ErrorCode.INVALID_RECORD_STATE, f"No record at offset {missing} is acquired by this member."
            )
        return ((offset, kind) for offset in present)

    async def release_member(self, member_id: str, acquisitions: Collection[int] | None = None) -> None:
        """Make every record `member_id` holds available again (its share session or membership ended);
        with `acquisitions`, only those it holds under them (what it held when its connection closed)."""
        async with self._lock:
            held = [
                o
                for o, r in self.records.items()
                if r.state is DeliveryState.ACQUIRED
                and r.member_id == member_id
                and (acquisitions is None or r.acquisition in acquisitions)
            ]
            await self._release(held)

    def acquisitions_of(self, member_id: str) -> frozenset[int]:
        """The acquisitions (locks) under which `member_id` holds records now."""
        return frozenset(
            r.acquisition
            for r in self.records.values()
            if r.state is DeliveryState.ACQUIRED and r.member_id == member_id
        )

    def _start_lock(self, acquisition: int) -> None:
        loop = asyncio.get_running_loop()
        self._timers[acquisition] = loop.call_later(
            self.limits.record_lock_duration_ms / 1000, self._lock_timed_out, acquisition
        )

    def _renew(self, offsets: set[int]) -> None:
        """Move records still held to a fresh lock; the lock they were under keeps the others."""
        acquisition = next(self._acquisitions)
        for offset in offsets:
            self.records[offset].acquisition = acquisition
        self._start_lock(acquisition)

    def _lock_timed_out(self, acquisition: int) -> None:
        self._timers.pop(acquisition, None)
        task = asyncio.ensure_future(self._release_acquisition(acquisition))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _release_acquisition(self, acquisition: int) -> None:
        async with self._lock:
            held = [
                o
                for o, r in self.records.items()
                if r.state is DeliveryState.ACQUIRED and r.acquisition == acquisition
            ]
            changes = {offset: self._released(self.records[offset]) for offset in held}
            try:
                await self._write_and_apply(changes)
            except KafkaError as error:
                # Released all the same, as Kafka 4.4: no timer is left to try again, and acquisitions
                # are never written, so the coordinator's state holds none of these as acquired.
                log.warning("share partition %s: timed-out locks released, not written: %s", self.key, error)
                self._apply(changes)

    async def _release(self, offsets: list[int]) -> None:
        changes = {offset: self._released(self.records[offset]) for offset in offsets}
        await self._write_and_apply(changes)

    def lock_timers_running(self) -> bool:
        return bool(self._timers)

    def close(self) -> None:
        """Stop this copy for good: it was replaced or dropped, so it is fenced too."""
        self.fenced = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for task in self._releases:
            task.cancel()

    # ----- state changes ---------------------------------------------------------------------------

    def _acknowledged(self, member_id: str, offset: int, kind: int) -> DeliveryState:
        if kind == AcknowledgeType.GAP and offset not in self.records:
            return DeliveryState.ARCHIVED  # an offset in flight without a record: nothing to deliver
        record = self._held(member_id, offset)
        if kind == AcknowledgeType.ACCEPT:
            return DeliveryState.ACKNOWLEDGED
        if kind == AcknowledgeType.RELEASE:
            return self._released(record)
        if kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
            return DeliveryState.ARCHIVED
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown acknowledge type {kind}.")

    def _held(self, member_id: str, offset: int) -> InFlight:
        record = self.records.get(offset)
        if record is None or record.state is not DeliveryState.ACQUIRED or record.member_id != member_id:
            raise KafkaError(
                ErrorCode.INVALID_RECORD_STATE,
                f"The record at offset {offset} is not acquired by this member.",
            )
        return record

    def _released(self, record: InFlight) -> DeliveryState:
        if record.delivery_count >= self.limits.delivery_count_limit:
            return DeliveryState.ARCHIVED
        return DeliveryState.AVAILABLE

    async def _write_and_apply(self, changes: dict[int, DeliveryState]) -> None:
        """Write the changes to the share coordinator, then apply them (a refused write applies none)."""
        if not changes:
            return
        start = self._start_offset_after(changes)
        batches = state_batches(
            {
                o: (state, self.records[o].delivery_count if o in self.records else 0)
                for o, state in changes.items()
            }
        )
        complete = self._delivery_complete_count(start, changes)
        try:
            await self.persister.write(
                self.key, self.state_epoch, self.leader_epoch, start, batches, complete
            )
        except ShareStateError as refused:
            if refused.error_code in (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.FENCED_LEADER_EPOCH):
                self.fenced = True  # the state moved on without us: the manager loads it again
            raise KafkaError(refused.error_code, refused.message) from refused
        self._apply(changes)

    def _apply(self, changes: dict[int, DeliveryState]) -> None:
        for offset, state in changes.items():
            record = self.records.get(offset)
            if record is None:
                if offset < self.end_offset and offset >= self.start_offset:
                    self.records[offset] = InFlight(state, 0)
                continue
            record.state = state
            if state is not DeliveryState.ACQUIRED:
                record.member_id = None
        self._move_start_offset()

    def _delivery_complete_count(self, start: int, changes: dict[int, DeliveryState]) -> int:
        """Records in flight from `start` on that nobody will be given again once `changes` apply
        (KIP-1226's DeliveryCompleteCount, which the lag subtracts); only records tracked count, as in
        Kafka's in-flight cache (not offsets of batches gone from the log between two fetched ones)."""
        count = 0
        for offset, record in self.records.items():
            if offset >= start and changes.get(offset, record.state) in DELIVERY_COMPLETE:
                count += 1
        for offset, state in changes.items():
            if offset not in self.records and start <= offset < self.end_offset:
                count += state in DELIVERY_COMPLETE
        return count

    def _start_offset_after(self, changes: dict[int, DeliveryState]) -> int:
        """Where the start offset moves once `changes` apply: the first record tracked that is not
        done, offsets with no record (compacted away) skipped in one step, not walked one by one."""
        for offset in sorted({*self.records, *changes}):
            if offset < self.start_offset:
                continue
            record = self.records.get(offset)
            state = changes.get(offset, record.state if record is not None else DeliveryState.ARCHIVED)
            if state not in DELIVERY_COMPLETE:
                return offset
        return self.end_offset

    def _move_start_offset(self) -> None:
        """Past the leading records nobody will be given again, which are forgotten, and past offsets
        with no record (a compaction gap of any length, in one step)."""
        while self.start_offset < self.end_offset:
            record = self.records.get(self.start_offset)
            if record is None:
                self.start_offset = min(
                    (o for o in self.records if o > self.start_offset), default=self.end_offset
                )
                continue
            if record.state not in DELIVERY_COMPLETE:
                break
            del self.records[self.start_offset]
            self.start_offset += 1
