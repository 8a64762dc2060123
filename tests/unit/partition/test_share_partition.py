"""Share partitions on the leader: acquisition, acknowledgement, locks, delivery counts, the start
offset, the in-flight limit, read_committed, and the state written to (and read back from) the share
coordinator."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from odradek.partition.share.in_flight import AcknowledgementBatch, AcknowledgeType, Acquired, ShareLimits
from odradek.partition.share.log_reader import LogBatch, LogChunk, read_batches
from odradek.partition.share.manager import SharePartitionManager
from odradek.partition.share.persister import DeliveryState, SharePartitionKey, ShareState, StateBatch
from odradek.partition.share.share_partition import SharePartition
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import Record, build_record_batch
from odradek.protocol.records.control import ControlRecordType, build_end_transaction_marker_batch
from odradek.storage.log import Log
from odradek.storage.producer_state import AppendOrigin
from tests.support.handler_services import HandlerBroker
from tests.support.share_persister import InMemorySharePersister

TOPIC_ID = uuid.UUID(int=7)
KEY = SharePartitionKey("sg", TOPIC_ID, 0)
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


class Setup:
    def __init__(self, broker: HandlerBroker, log: Log, limits: ShareLimits) -> None:
        self.broker = broker
        self.log = log
        self.persister = InMemorySharePersister()
        self.limits = limits
        self.manager = SharePartitionManager(self.persister, lambda: self.limits, 100)

    def produce(self, count: int, **options: object) -> None:
        records = [Record(offset=i, timestamp=1, key=None, value=b"v%d" % i) for i in range(count)]
        self.log.append(bytearray(build_record_batch(records, **options)))

    async def partition(self, leader_epoch: int = 0) -> SharePartition:
        return await self.manager.partition(KEY, self.log, leader_epoch)

    async def fetch(self, member: str, max_records: int = 500) -> list[Acquired]:
        share = await self.partition()
        chunk = read_batches(self.log, share.next_fetch_offset(), 1 << 20, share.read_committed)
        return await share.acquire(member, chunk, max_records)


def run(
    tmp_path: Path,
    scenario: Callable[[Setup], Awaitable[None]],
    lock_ms: int = 30_000,
    delivery_limit: int = 5,
    max_locks: int = 2000,
    auto_offset_reset: str = "earliest",
) -> None:
    async def main() -> None:
        broker = HandlerBroker(tmp_path / "data")
        await broker.create_topic("t")
        setup = Setup(broker, broker.log("t"), ShareLimits(lock_ms, delivery_limit, max_locks))
        setup.manager.auto_offset_reset = auto_offset_reset
        await setup.persister.initialize(KEY, 0, -1)
        try:
            await scenario(setup)
        finally:
            setup.manager.close()
            broker.close()

    asyncio.run(main())


def ack(first: int, last: int, kind: AcknowledgeType) -> list[AcknowledgementBatch]:
    return [AcknowledgementBatch(first, last, (int(kind),))]


def test_records_acquired_by_one_member_are_not_given_to_another_until_released(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(5)
        assert await s.fetch("a") == [Acquired(0, 4, 1)]
        assert await s.fetch("b") == []
        share = await s.partition()
        await share.acknowledge("a", ack(0, 1, ACCEPT) + ack(2, 4, RELEASE))
        assert share.start_offset == 2
        assert await s.fetch("b") == [Acquired(2, 4, 2)]

    run(tmp_path, scenario)


def test_a_rejected_record_is_never_delivered_again(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(3)
        await s.fetch("a")
        share = await s.partition()
        await share.acknowledge("a", [AcknowledgementBatch(0, 2, (int(RELEASE), int(REJECT), int(RELEASE)))])
        assert await s.fetch("b") == [Acquired(0, 0, 2), Acquired(2, 2, 2)]
        assert share.records[1].state is DeliveryState.ARCHIVED

    run(tmp_path, scenario)


def test_a_member_may_not_acknowledge_records_it_did_not_acquire(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(2)
        await s.fetch("a")
        share = await s.partition()
        with pytest.raises(KafkaError) as refused:
            await share.acknowledge("b", ack(0, 1, ACCEPT))
        assert refused.value.error_code == ErrorCode.INVALID_RECORD_STATE
        with pytest.raises(KafkaError):
            await share.acknowledge("a", ack(0, 5, ACCEPT))  # past what it holds: nothing applied
        assert all(r.state is DeliveryState.ACQUIRED for r in share.records.values())
        assert [name for name, _ in s.persister.calls].count("write") == 1  # only the start offset

    run(tmp_path, scenario)


def test_records_are_archived_when_their_delivery_count_reaches_the_limit(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(1)
        share = await s.partition()
        for delivery in (1, 2, 3):
            assert await s.fetch("a") == [Acquired(0, 0, delivery)]
            await share.acknowledge("a", ack(0, 0, RELEASE))
        assert await s.fetch("a") == []
        assert share.start_offset == 1  # archived and forgotten

    run(tmp_path, scenario, delivery_limit=3)


def test_a_timed_out_acquisition_lock_makes_the_records_available_again(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(2)
        assert await s.fetch("a") == [Acquired(0, 1, 1)]
        share = await s.partition()
        for _ in range(200):  # the lock is 50 ms; give the release (a write) time on a loaded machine
            await asyncio.sleep(0.01)
            if share.records[0].state is DeliveryState.AVAILABLE:
                break
        assert await s.fetch("b") == [Acquired(0, 1, 2)]
        with pytest.raises(KafkaError):
            await share.acknowledge("a", ack(0, 1, ACCEPT))  # a's lock is gone

    run(tmp_path, scenario, lock_ms=50)


def test_no_more_records_are_acquired_past_the_in_flight_limit(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        for _ in range(4):
            s.produce(1)
        assert await s.fetch("a") == [Acquired(0, 2, 1)]
        assert await s.fetch("b") == []
        share = await s.partition()
        await share.acknowledge("a", ack(0, 0, ACCEPT))
        assert await s.fetch("b") == [Acquired(3, 3, 1)]

    run(tmp_path, scenario, max_locks=3)


def test_control_records_and_aborted_transactions_are_not_delivered_to_read_committed(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.manager.read_committed = True
        s.produce(1)
        s.produce(2, producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True)
        marker = build_end_transaction_marker_batch(
            ControlRecordType.ABORT, producer_id=5, producer_epoch=0, coordinator_epoch=0, timestamp=1
        )
        s.log.append(bytearray(marker), origin=AppendOrigin.COORDINATOR)
        s.produce(1)
        assert await s.fetch("a") == [Acquired(0, 0, 1), Acquired(4, 4, 1)]  # 1-2 aborted, 3 the marker
        assert (await s.partition()).records[3].state is DeliveryState.ARCHIVED

    run(tmp_path, scenario)


def test_a_commit_marker_is_skipped_and_its_transaction_delivered(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(2, producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True)
        marker = build_end_transaction_marker_batch(
            ControlRecordType.COMMIT, producer_id=5, producer_epoch=0, coordinator_epoch=0, timestamp=1
        )
        s.log.append(bytearray(marker), origin=AppendOrigin.COORDINATOR)
        s.produce(1)
        assert await s.fetch("a") == [Acquired(0, 1, 1), Acquired(3, 3, 1)]

    run(tmp_path, scenario)


def test_a_new_share_partition_starts_at_the_high_watermark_by_default(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(3)
        share = await s.partition()
        assert share.start_offset == 3
        assert s.persister.states[KEY].start_offset == 3  # resolved once, and written
        s.produce(1)
        assert await s.fetch("a") == [Acquired(3, 3, 1)]

    run(tmp_path, scenario, auto_offset_reset="latest")


def test_acknowledged_state_survives_a_new_leader(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(4)
        await s.fetch("a")
        share = await s.partition()
        await share.acknowledge("a", ack(0, 0, ACCEPT) + ack(1, 1, RELEASE) + ack(2, 2, REJECT))
        # a new leader epoch: the state comes back from the share coordinator; offset 3 was only
        # acquired (never written) and is available again, offset 1 keeps its delivery count
        moved = await s.partition(leader_epoch=1)
        assert moved is not share and moved.start_offset == 1
        assert await moved.acquire("b", read_batches(s.log, 1, 1 << 20, False), 10) == [
            Acquired(1, 1, 2),
            Acquired(3, 3, 1),
        ]
        with pytest.raises(KafkaError) as fenced:
            await share.acknowledge("a", ack(3, 3, ACCEPT))  # the old leader's write is fenced
        assert fenced.value.error_code == ErrorCode.FENCED_LEADER_EPOCH

    run(tmp_path, scenario)


def test_a_refused_write_changes_nothing(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(1)
        await s.fetch("a")
        share = await s.partition()
        s.persister.refuse(KEY, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        with pytest.raises(KafkaError) as refused:
            await share.acknowledge("a", ack(0, 0, ACCEPT))
        assert refused.value.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert share.records[0].state is DeliveryState.ACQUIRED and share.start_offset == 0

    run(tmp_path, scenario)


def test_a_member_leaving_releases_what_it_holds(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(2)
        await s.fetch("a")
        await s.manager.release_member("sg", "a")
        assert await s.fetch("b") == [Acquired(0, 1, 2)]

    run(tmp_path, scenario)


def test_a_share_partition_fenced_by_altered_offsets_is_loaded_again(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(10)
        await s.fetch("a")
        share = await s.partition()
        await s.persister.initialize(KEY, 1, 7)  # AlterShareGroupOffsets: a higher state epoch
        with pytest.raises(KafkaError) as fenced:
            await share.acknowledge("a", ack(0, 0, ACCEPT))
        assert fenced.value.error_code == ErrorCode.FENCED_STATE_EPOCH
        again = await s.partition()
        assert again is not share and again.start_offset == 7
        assert await s.fetch("b") == [Acquired(7, 9, 1)]

    run(tmp_path, scenario)


def test_an_acknowledgement_of_a_huge_range_is_refused_without_walking_it(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(2)
        await s.fetch("a")
        share = await s.partition()
        for kind in (AcknowledgeType.GAP, ACCEPT):
            with pytest.raises(KafkaError) as refused:
                await share.acknowledge("a", ack(0, 2**62, kind))
            assert refused.value.error_code == ErrorCode.INVALID_RECORD_STATE
        with pytest.raises(KafkaError) as unknown:
            await share.acknowledge("a", [AcknowledgementBatch(0, 1, (9,))])
        assert unknown.value.error_code == ErrorCode.INVALID_REQUEST
        assert all(r.state is DeliveryState.ACQUIRED for r in share.records.values())

    run(tmp_path, scenario)


def test_a_share_partition_no_longer_led_here_is_dropped_and_its_locks_stopped(tmp_path: Path) -> None:
    async def scenario(s: Setup) -> None:
        s.produce(2)
        await s.fetch("a")
        share = await s.partition()
        other = SharePartitionKey("other-group", TOPIC_ID, 0)
        elsewhere = SharePartitionKey("sg", uuid.UUID(int=8), 0)
        for key in (other, elsewhere):
            await s.persister.initialize(key, 0, -1)
        kept = await s.manager.partition(elsewhere, s.log, 0)
        gone = await s.manager.partition(other, s.log, 0)
        s.manager.stopped_leading([(TOPIC_ID, 0)])
        # every group's share partition of it is gone, as Kafka's onBecomingFollower; others stay
        assert s.manager.existing(KEY) is None and s.manager.existing(other) is None
        assert s.manager.existing(kept.key) is kept
        # the lock timers of what it had acquired no longer run (they would write as a stale leader)
        assert share.fenced and gone.fenced and not share.lock_timers_running()

    run(tmp_path, scenario)


def test_a_gap_acknowledgement_of_records_the_member_does_not_hold_is_refused_not_archived(
    tmp_path: Path,
) -> None:
    """GAP archived any in-flight record that was not another member's: one member could archive
    available records (released, or whose lock timed out) that nobody was delivered, and a slow
    client's late GAP did the same. As Kafka: only offsets the member holds may be acknowledged."""

    async def scenario(s: Setup) -> None:
        s.produce(3)
        assert await s.fetch("a") == [Acquired(0, 2, 1)]
        share = await s.partition()
        await share.acknowledge("a", ack(0, 2, RELEASE))
        with pytest.raises(KafkaError) as refused:
            await share.acknowledge("b", ack(0, 2, AcknowledgeType.GAP))
        assert refused.value.error_code == ErrorCode.INVALID_RECORD_STATE
        assert await s.fetch("c") == [Acquired(0, 2, 2)]

    run(tmp_path, scenario)


class _StalledPersister(InMemorySharePersister):
    """The in-memory share coordinator, whose writes at one leader epoch wait until `resume` (a
    coordinator that died mid-write and whose partition is being moved)."""

    def __init__(self, stalled_epoch: int) -> None:
        super().__init__()
        self.stalled_epoch = stalled_epoch
        self.resume = asyncio.Event()
        self.stalled = asyncio.Event()

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        if leader_epoch == self.stalled_epoch:
            self.stalled.set()
            await self.resume.wait()
        await super().write(key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count)


@pytest.mark.timeout(30)
def test_a_share_partition_replaced_at_a_new_leader_epoch_acquires_nothing_for_a_fetch_that_waited_on_it(
    tmp_path: Path,
) -> None:
    """ShareGroupFailoverTest (share coordinator killed) saw an acknowledged record delivered again: a
    fetch that got the share partition before the leader epoch moved (the dead broker left the ISR)
    waited for its lock behind a write to the dead coordinator, then acquired from that replaced copy
    records the new copy had meanwhile delivered and seen acknowledged. As Kafka 4.4's SharePartition,
    a fenced copy acquires nothing; the fetch's next round takes the new one."""

    async def scenario(s: Setup) -> None:
        s.persister = persister = _StalledPersister(stalled_epoch=-1)
        s.manager = SharePartitionManager(persister, lambda: s.limits, 100, auto_offset_reset="earliest")
        await persister.initialize(KEY, 0, -1)
        s.produce(2)
        old = await s.partition(leader_epoch=0)
        assert await s.fetch("a") == [Acquired(0, 1, 1)]
        await old.acknowledge("a", ack(0, 0, RELEASE))  # offset 0 available again, delivered once
        persister.stalled_epoch = 0
        # a's acceptance of offset 1 is being written when the coordinator dies: old's lock is held
        accepting = asyncio.ensure_future(old.acknowledge("a", ack(1, 1, ACCEPT)))
        await persister.stalled.wait()
        # b's fetch got the share partition at epoch 0 and waits for its lock
        waiting = asyncio.ensure_future(old.acquire("b", read_batches(s.log, 0, 1 << 20, False), 10))
        await asyncio.sleep(0)
        assert not waiting.done()
        # the leader epoch moves: the state is read again; c is given offset 0 and accepts it
        new = await s.manager.partition(KEY, s.log, 1)
        assert new is not old
        assert await new.acquire("c", read_batches(s.log, 0, 1 << 20, False), 10) == [
            Acquired(0, 0, 2),
            Acquired(1, 1, 1),
        ]
        await new.acknowledge("c", ack(0, 1, ACCEPT))
        persister.resume.set()
        with pytest.raises(KafkaError) as fenced:
            await accepting
        assert fenced.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
        # the replaced copy gives nothing, least of all offset 0, which c's acceptance made final
        assert await waiting == []
        assert await s.manager.partition(KEY, s.log, 1) is new

    run(tmp_path, scenario)


class _StalledReads(InMemorySharePersister):
    """The in-memory share coordinator, whose reads at one leader epoch wait until `resume`."""

    def __init__(self, stalled_epoch: int) -> None:
        super().__init__()
        self.stalled_epoch = stalled_epoch
        self.resume = asyncio.Event()
        self.stalled = asyncio.Event()

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        if leader_epoch == self.stalled_epoch:
            self.stalled.set()
            await self.resume.wait()
        return await super().read(key, leader_epoch)


@pytest.mark.timeout(30)
def test_a_fetch_at_a_new_leader_epoch_does_not_take_the_copy_a_load_at_the_old_epoch_made(
    tmp_path: Path,
) -> None:
    """A load at the old leader epoch still waiting for the share coordinator (which was being moved)
    was handed to a request at the new epoch: it served a copy of the old epoch, whose acquisitions
    the copy loaded at the new epoch next knows nothing of. A request waits for that load, then loads
    at its own epoch."""

    async def scenario(s: Setup) -> None:
        s.persister = persister = _StalledReads(stalled_epoch=0)
        s.manager = SharePartitionManager(persister, lambda: s.limits, 100, auto_offset_reset="earliest")
        await persister.initialize(KEY, 0, 0)
        s.produce(1)
        old_epoch = asyncio.ensure_future(s.manager.partition(KEY, s.log, 0))
        await persister.stalled.wait()
        new_epoch = asyncio.ensure_future(s.manager.partition(KEY, s.log, 1))
        await asyncio.sleep(0)
        persister.resume.set()
        old = await old_epoch
        share = await new_epoch
        # the new epoch's request got a copy of its own epoch, read after the old one's (which it fences)
        assert old.leader_epoch == 0 and share.leader_epoch == 1 and share is not old
        assert old.fenced and s.manager.existing(KEY) is share
        assert persister.calls[-1] == ("read", KEY)

    run(tmp_path, scenario)


def test_a_timed_out_lock_whose_release_cannot_be_written_still_makes_the_records_available(
    tmp_path: Path,
) -> None:
    """A lock that timed out while the share coordinator refused writes left its records acquired, with
    no timer left to release them: nobody was given them again until their member left (never, for a
    member that died without a session close). As Kafka 4.4's SharePartition, the release happens in
    memory even when its write fails (acquisitions are not written, so the coordinator's state does
    not hold them as acquired either)."""

    async def scenario(s: Setup) -> None:
        s.produce(2)
        assert await s.fetch("a") == [Acquired(0, 1, 1)]
        share = await s.partition()
        writes = [name for name, _ in s.persister.calls].count("write")
        s.persister.refuse(KEY, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        for _ in range(500):  # the lock is 50 ms; give the refused release time on a loaded machine
            await asyncio.sleep(0.01)
            if [name for name, _ in s.persister.calls].count("write") > writes and not share._releases:
                break
        assert not share.lock_timers_running()
        del s.persister.refusals[KEY]
        assert await s.fetch("b") == [Acquired(0, 1, 2)]

    run(tmp_path, scenario, lock_ms=50)


_GAP_END = 10**15  # where the next batch starts after a compaction gap (or a hostile GAP range ends)


def _batches_at(*ranges: tuple[int, int]) -> LogChunk:
    return LogChunk(b"", tuple(LogBatch(first, last, True) for first, last in ranges))


@pytest.mark.timeout(30)
def test_a_share_partition_steps_over_a_compaction_gap_in_one_step_not_offset_by_offset(
    tmp_path: Path,
) -> None:
    """Batches compacted away between two fetched ones leave offsets with no record in flight; the start
    offset walked them one at a time on the event loop (10**15 of them: the broker froze) whenever it
    moved, and a fetch right after the gap acquired nothing (the gap counted as in flight)."""

    async def scenario(s: Setup) -> None:
        share = await s.partition()
        assert await share.acquire("a", _batches_at((0, 1)), 10) == [Acquired(0, 1, 1)]
        await share.acknowledge("a", ack(0, 1, ACCEPT))
        # nothing in flight: the start offset follows the end over the gap at once
        assert await share.acquire("a", _batches_at((_GAP_END, _GAP_END + 1)), 10) == [
            Acquired(_GAP_END, _GAP_END + 1, 1)
        ]
        assert share.start_offset == _GAP_END
        # records held before a gap: accepting them moves the start offset over it in one step
        assert await share.acquire("b", _batches_at((_GAP_END + 2, _GAP_END + 3)), 10) == [
            Acquired(_GAP_END + 2, _GAP_END + 3, 1)
        ]
        assert await share.acquire("b", _batches_at((2 * _GAP_END, 2 * _GAP_END)), 10) == []
        await share.acknowledge("a", ack(_GAP_END, _GAP_END + 1, ACCEPT))
        await share.acknowledge("b", ack(_GAP_END + 2, _GAP_END + 3, ACCEPT))
        assert share.start_offset == share.end_offset == 2 * _GAP_END

    run(tmp_path, scenario)


@pytest.mark.timeout(30)
def test_a_gap_acknowledgement_over_offsets_without_records_is_not_walked_offset_by_offset(
    tmp_path: Path,
) -> None:
    """A GAP acknowledgement's range is the client's: over a compaction gap in flight it was walked and
    kept offset by offset (10**15 entries: the broker froze, then ran out of memory). Offsets with no
    record have nothing to change: only those tracked are acknowledged, as Kafka's in-flight cache."""

    async def scenario(s: Setup) -> None:
        share = await s.partition()
        assert await share.acquire("a", _batches_at((0, 1)), 10) == [Acquired(0, 1, 1)]
        assert await share.acquire("b", _batches_at((_GAP_END, _GAP_END)), 10) == []
        await share.acknowledge("a", ack(0, _GAP_END - 1, AcknowledgeType.GAP))
        assert share.start_offset == _GAP_END
        with pytest.raises(KafkaError) as refused:  # an ACCEPT over offsets with no record: refused
            await share.acknowledge("a", ack(_GAP_END, _GAP_END, ACCEPT))
        assert refused.value.error_code == ErrorCode.INVALID_RECORD_STATE

    run(tmp_path, scenario)


@pytest.mark.timeout(30)
def test_a_fetch_waiting_for_a_share_partitions_load_is_answered_not_leader_when_it_stops_being_led_here(
    tmp_path: Path,
) -> None:
    """A load cancelled because the partition was no longer led here (a LeaderAndIsr, a topic deleted)
    raised CancelledError in the ShareFetch waiting for it: the connection's serving task ended as
    cancelled, leaving the connection open and unserved (its client waited out its request timeout).
    The fetch is answered NOT_LEADER_OR_FOLLOWER, as for a partition led elsewhere."""

    async def scenario(s: Setup) -> None:
        s.persister = persister = _StalledReads(stalled_epoch=0)
        s.manager = SharePartitionManager(persister, lambda: s.limits, 100, auto_offset_reset="earliest")
        await persister.initialize(KEY, 0, -1)
        waiting = asyncio.ensure_future(s.manager.partition(KEY, s.log, 0))
        await persister.stalled.wait()
        s.manager.stopped_leading([(TOPIC_ID, 0)])
        with pytest.raises(KafkaError) as refused:
            await waiting
        assert refused.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

    run(tmp_path, scenario)
