"""The share coordinator on a single node's `__share_group_state`: steps, fencing, snapshots, replay."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from odradek.coordinator.runtime import PartitionState
from odradek.coordinator.share import shard as shard_module
from odradek.coordinator.share.records import SNAPSHOT, UPDATE, decode_share_record
from odradek.partition.share.persister import (
    DeliveryState,
    SharePartitionKey,
    ShareState,
    ShareStateError,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.config import LogConfig
from tests.unit.coordinator.share.harness import ShareHarness

ACKED, AVAILABLE = DeliveryState.ACKNOWLEDGED, DeliveryState.AVAILABLE


def in_harness(scenario: Callable[[ShareHarness], Awaitable[None]]) -> Callable[[Path], None]:
    """A test running `scenario` on a started coordinator (a snapshot every third write)."""

    def test(tmp_path: Path) -> None:
        async def main() -> None:
            harness = ShareHarness(
                tmp_path, **{"share.coordinator.snapshot.update.records.per.snapshot": "2"}
            )
            await harness.start()
            try:
                await scenario(harness)
            finally:
                harness.stop()

        asyncio.run(main())

    test.__name__ = scenario.__name__
    return test


async def _key(harness: ShareHarness, partition: int = 0) -> SharePartitionKey:
    return SharePartitionKey("billing", await harness.topic(), partition)


def _record_types(harness: ShareHarness, key: SharePartitionKey) -> list[tuple[int, bool]]:
    """(record type, has a value) of each record of `key`."""
    out = []
    for k, v in harness.records(key):
        record = decode_share_record(k, v)
        if record.key == key:
            out.append((record.record_type, record.value is not None))
    return out


@in_harness
async def test_the_topic_is_created_internal_with_kafkas_configs(harness: ShareHarness) -> None:
    topic = harness.cluster.topic("__share_group_state")
    assert topic is not None
    assert topic.is_internal
    assert len(topic.partitions) == 3
    assert topic.configs["cleanup.policy"] == "delete"
    assert topic.configs["retention.ms"] == "-1"


@in_harness
async def test_a_written_state_reads_back_and_survives_a_restart(harness: ShareHarness) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, state_epoch=0, start_offset=10)
    await coordinator.write(key, 0, 1, 10, (StateBatch(10, 14, ACKED, 1), StateBatch(15, 19, AVAILABLE, 2)))
    batches = (StateBatch(10, 14, ACKED, 1), StateBatch(15, 19, AVAILABLE, 2))
    # the new leader's read records its epoch (what the restarted coordinator reads back)
    assert await coordinator.read(key, leader_epoch=1) == ShareState(0, 1, 10, batches, 0)
    coordinator = await harness.restart()
    assert await coordinator.read(key, leader_epoch=1) == ShareState(0, 1, 10, batches, 0)


@in_harness
async def test_every_nth_write_is_a_whole_snapshot_and_replay_gives_the_same_state(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    for offset in range(5):
        await coordinator.write(key, 0, 0, 0, (StateBatch(offset, offset, ACKED, 1),))
    # initialize's snapshot, two updates, a snapshot (the third write), two updates
    assert _record_types(harness, key) == [
        (SNAPSHOT, True),
        (UPDATE, True),
        (UPDATE, True),
        (SNAPSHOT, True),
        (UPDATE, True),
        (UPDATE, True),
    ]
    before = await coordinator.read(key, 0)
    assert before.batches == (StateBatch(0, 4, ACKED, 1),)
    assert await (await harness.restart()).read(key, 0) == before


@in_harness
async def test_a_write_of_an_older_leader_epoch_is_fenced_after_a_new_leader_read(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    await coordinator.read(key, leader_epoch=5)  # the new leader: its epoch is written
    with pytest.raises(ShareStateError) as refused:
        await coordinator.write(key, 0, 4, 0, (StateBatch(0, 0, ACKED, 1),))
    assert refused.value.error_code is ErrorCode.FENCED_LEADER_EPOCH
    with pytest.raises(ShareStateError) as refused:
        await coordinator.read(key, leader_epoch=4)
    assert refused.value.error_code is ErrorCode.FENCED_LEADER_EPOCH
    # ... and the fence is in the log: a restarted coordinator still refuses the old leader
    coordinator = await harness.restart()
    with pytest.raises(ShareStateError) as refused:
        await coordinator.write(key, 0, 4, 0, ())
    assert refused.value.error_code is ErrorCode.FENCED_LEADER_EPOCH


@in_harness
async def test_a_write_of_an_older_state_epoch_is_fenced_after_a_reinitialization(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    await coordinator.initialize(key, 1, 100)  # AlterShareGroupOffsets: a new state epoch
    with pytest.raises(ShareStateError) as refused:
        await coordinator.write(key, 0, 0, 0, ())
    assert refused.value.error_code is ErrorCode.FENCED_STATE_EPOCH
    with pytest.raises(ShareStateError) as refused:
        await coordinator.initialize(key, 0, 0)
    assert refused.value.error_code is ErrorCode.FENCED_STATE_EPOCH
    assert (await coordinator.read(key, 0)).start_offset == 100


@in_harness
async def test_reads_and_writes_of_a_state_never_initialized_are_invalid_requests(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    for step in (coordinator.read(key, 0), coordinator.write(key, 0, 0, 0, ())):
        with pytest.raises(ShareStateError) as refused:
            await step
        assert refused.value.error_code is ErrorCode.INVALID_REQUEST
    # the summary of a state never initialised: start offset -1, as Kafka's
    assert await coordinator.read_summary(key, 0) == ShareStateSummary(0, 0, -1, -1)


@in_harness
async def test_unknown_topics_partitions_and_negative_epochs_are_refused(harness: ShareHarness) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    unknown_topic = SharePartitionKey("billing", uuid.uuid4(), 0)
    unknown_partition = SharePartitionKey("billing", key.topic_id, 7)
    for bad in (unknown_topic, unknown_partition):
        with pytest.raises(ShareStateError) as refused:
            await coordinator.initialize(bad, 0, 0)
        assert refused.value.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ShareStateError) as refused:
        await coordinator.initialize(SharePartitionKey("billing", key.topic_id, -1), 0, 0)
    assert refused.value.error_code is ErrorCode.INVALID_REQUEST
    await coordinator.initialize(key, 0, 0)
    with pytest.raises(ShareStateError) as refused:
        await coordinator.write(key, 0, -1, 0, ())
    assert refused.value.error_code is ErrorCode.INVALID_REQUEST


@in_harness
async def test_a_deleted_state_is_a_tombstone_and_stays_deleted_after_a_restart(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 3, 0)
    await coordinator.delete(key)
    await coordinator.delete(key)  # nothing left: nothing written
    assert _record_types(harness, key) == [(SNAPSHOT, True), (SNAPSHOT, False)]
    coordinator = await harness.restart()
    with pytest.raises(ShareStateError) as refused:
        await coordinator.read(key, 0)
    assert refused.value.error_code is ErrorCode.INVALID_REQUEST
    # the state epochs went with it: a new group may start again from 0
    await coordinator.initialize(key, 0, 0)


@in_harness
async def test_the_start_offset_never_moves_back_and_batches_below_it_are_dropped(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    await coordinator.write(key, 0, 0, 0, (StateBatch(0, 9, AVAILABLE, 1),))
    await coordinator.write(key, 0, 0, 5, ())
    await coordinator.write(key, 0, 0, 2, ())  # an older leader's view: ignored
    state = await coordinator.read(key, 0)
    assert state.start_offset == 5
    assert state.batches == (StateBatch(5, 9, AVAILABLE, 1),)


@in_harness
async def test_keys_are_refused_not_coordinator_when_their_partition_is_not_led_here(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    partition = coordinator.runtime.partition_for(key.coordinator_key)
    coordinator.runtime.resign(partition)
    harness.cluster.partition("__share_group_state", partition).leader_id = 2  # type: ignore[union-attr]
    with pytest.raises(ShareStateError) as refused:
        await coordinator.initialize(key, 0, 0)
    assert refused.value.error_code is ErrorCode.NOT_COORDINATOR


@in_harness
async def test_a_key_is_placed_by_the_java_hash_of_kafkas_coordinator_key(harness: ShareHarness) -> None:
    # Kafka writes the topic id in the key in URL-safe base64 (Uuid.toString), not as hex
    key = SharePartitionKey("g", uuid.UUID(bytes=bytes(range(16))), 1)
    assert key.coordinator_key == "g:AAECAwQFBgcICQoLDA0ODw:1"
    assert SharePartitionKey.from_coordinator_key(key.coordinator_key) == key


@in_harness
async def test_keys_of_a_partition_still_loading_are_refused_load_in_progress(harness: ShareHarness) -> None:
    coordinator = harness.coordinator
    key = await _key(harness)
    partition = coordinator.runtime.partition_for(key.coordinator_key)
    coordinator.runtime.resign(partition)
    coordinator.runtime.states[partition] = PartitionState.LOADING
    with pytest.raises(ShareStateError) as refused:
        await coordinator.read_summary(key, 0)
    assert refused.value.error_code is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


@in_harness
async def test_a_write_of_more_batches_than_a_record_holds_is_refused_before_any_work(
    harness: ShareHarness,
) -> None:
    """Combining and encoding 200,000 batches held the event loop for seconds, only for the append to
    refuse the record as larger than max.message.bytes; a 100 MB request would have held it a minute."""
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    batches = tuple(StateBatch(i, i, ACKED if i % 2 else AVAILABLE, 1) for i in range(200_000))
    combined: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(shard_module, "combine_batches", lambda *args: combined.append(1) or ())
        with pytest.raises(ShareStateError) as refused:
            await coordinator.write(key, 0, 0, 0, batches)
    assert refused.value.error_code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert combined == []
    assert (await coordinator.read(key, 0)).batches == ()


@in_harness
async def test_records_before_every_states_last_snapshot_are_pruned_and_the_state_survives(
    harness: ShareHarness,
) -> None:
    """`__share_group_state` keeps records forever (retention.ms -1): without the prune job of
    share.coordinator.state.topic.prune.interval.ms it grew by a record a write, without end."""
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    for offset in range(7):  # snapshots at the 3rd and 6th write: the newest is record 6
        await coordinator.write(key, 0, 0, 0, (StateBatch(offset, offset, ACKED, 1),))
    log_ = harness.logs.get_log("__share_group_state", coordinator.runtime.partition_for(key.coordinator_key))
    assert log_ is not None and log_.log_start_offset == 0
    await coordinator.prune()
    assert log_.log_start_offset == 6
    before = await coordinator.read(key, 0)
    assert await (await harness.restart()).read(key, 0) == before


@in_harness
async def test_pruning_deletes_records_through_partitions_entry_and_its_rules(harness: ShareHarness) -> None:
    """The prune job moves the log start through partition/'s DeleteRecords entry (as Kafka's share
    coordinator asks ReplicaManager.deleteRecords through its PartitionWriter), whose rules apply: a
    partition whose cleanup.policy has no delete (POLICY_VIOLATION), or that is led here no more, is
    not pruned. The job once moved the log start itself, whatever the policy."""
    coordinator = harness.coordinator
    key = await _key(harness)
    await coordinator.initialize(key, 0, 0)
    for offset in range(7):  # snapshots at the 3rd and 6th write: the newest is record 6
        await coordinator.write(key, 0, 0, 0, (StateBatch(offset, offset, ACKED, 1),))
    partition = coordinator.runtime.partition_for(key.coordinator_key)
    log_ = harness.logs.get_log("__share_group_state", partition)
    assert log_ is not None
    harness.logs.apply_topic_config(
        "__share_group_state", LogConfig.from_mapping({"cleanup.policy": "compact"})
    )
    await coordinator.prune()
    assert log_.log_start_offset == 0
    harness.logs.apply_topic_config(
        "__share_group_state", LogConfig.from_mapping({"cleanup.policy": "delete"})
    )
    harness.replicas.stop_partitions([("__share_group_state", partition)], delete=False)  # led elsewhere
    await coordinator.prune()
    assert log_.log_start_offset == 0


@in_harness
async def test_pruning_stops_at_the_oldest_snapshot_any_state_still_needs(harness: ShareHarness) -> None:
    coordinator = harness.coordinator
    topic_id = await harness.topic()
    runtime = coordinator.runtime
    first = SharePartitionKey("a", topic_id, 0)
    # a second group whose state hashes to the same `__share_group_state` partition
    second = next(
        key
        for key in (SharePartitionKey(f"b{i}", topic_id, 0) for i in range(100))
        if runtime.partition_for(key.coordinator_key) == runtime.partition_for(first.coordinator_key)
    )
    await coordinator.initialize(first, 0, 0)  # record 0: first's only snapshot
    await coordinator.initialize(second, 0, 0)
    for offset in range(3):
        await coordinator.write(second, 0, 0, 0, (StateBatch(offset, offset, ACKED, 1),))
    await coordinator.delete(first)  # a deleted state needs nothing
    await coordinator.prune()
    log_ = harness.logs.get_log("__share_group_state", runtime.partition_for(second.coordinator_key))
    assert log_ is not None and log_.log_start_offset == 4  # second's newest snapshot (its 3rd write)


@in_harness
async def test_an_idle_state_gets_a_new_snapshot_so_pruning_passes_it(harness: ShareHarness) -> None:
    """Without share.coordinator.cold.partition.snapshot.interval.ms's job, a state nobody wrote any
    more held its partition's pruning at its old snapshot for ever."""
    coordinator = harness.coordinator
    topic_id = await harness.topic()
    runtime = coordinator.runtime
    idle = SharePartitionKey("idle", topic_id, 0)
    busy = next(
        key
        for key in (SharePartitionKey(f"busy{i}", topic_id, 0) for i in range(100))
        if runtime.partition_for(key.coordinator_key) == runtime.partition_for(idle.coordinator_key)
    )
    await coordinator.initialize(idle, 0, 7)  # record 0
    await coordinator.initialize(busy, 0, 0)  # record 1
    for offset in range(3):  # records 2, 3 and the snapshot 4
        await coordinator.write(busy, 0, 0, 0, (StateBatch(offset, offset, ACKED, 1),))
    await coordinator.prune()
    log_ = harness.logs.get_log("__share_group_state", runtime.partition_for(idle.coordinator_key))
    assert log_ is not None and log_.log_start_offset == 0  # the idle state's snapshot holds it
    harness.now_ms += 300_000  # the default interval: both states' snapshots are that old now
    await coordinator.snapshot_cold_states()
    await coordinator.prune()
    assert log_.log_start_offset == 5  # the new snapshots: records 5 and 6
    assert (await coordinator.read(idle, 0)).start_offset == 7
    coordinator = await harness.restart()
    assert (await coordinator.read(idle, 0)).start_offset == 7


@in_harness
async def test_the_states_of_a_deleted_topic_are_tombstoned_in_every_group_and_no_other(
    harness: ShareHarness,
) -> None:
    coordinator = harness.coordinator
    deleted = await harness.topic("orders", 2)
    kept = await harness.topic("payments", 1)
    keys = [SharePartitionKey(g, deleted, p) for g in ("billing", "audit") for p in (0, 1)]
    other = SharePartitionKey("billing", kept, 0)
    for key in [*keys, other]:
        await coordinator.initialize(key, 0, 0)
    await coordinator.topics_deleted({deleted})
    for key in keys:
        assert _record_types(harness, key)[-1] == (SNAPSHOT, False)
    coordinator = await harness.restart()
    for key in keys:
        with pytest.raises(ShareStateError):
            await coordinator.read(key, 0)
    assert (await coordinator.read(other, 0)).start_offset == 0
