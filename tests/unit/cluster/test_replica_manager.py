"""The replica manager and the UpdateMetadata cache update, called directly (no codec): the fencing
order, state changes taking turns, and partial metadata updates."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
import stat
import uuid
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership, StopReplicaPartition
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.metadata_update import apply_update_metadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.partition.leadership import Refusal
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.records import RecordBatchBuilder
from odradek.storage.config import LogConfig
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr

NODE = 2


def _state(partition: int, leader: int, epoch: int, topic: str = "t") -> PartitionLeadership:
    return PartitionLeadership(
        topic=topic,
        partition=partition,
        controller_epoch=1,
        leader=leader,
        leader_epoch=epoch,
        isr=[1, 2],
        partition_epoch=0,
        replicas=[1, 2],
    )


def _broker(node_id: int, listener: str = "PLAINTEXT") -> LiveBroker:
    return LiveBroker(node_id, {listener: BrokerEndpoint(node_id, f"b{node_id}", 9092)}, None)


def test_the_broker_epoch_is_checked_before_the_controller_epoch(logs: LogManager) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, broker_epoch=50)
    replicas.controller_epoch = 9
    with pytest.raises(KafkaError) as raised:
        replicas.check_stamp(ControllerStamp(1, 3, 49))
    assert raised.value.error_code is ErrorCode.STALE_BROKER_EPOCH
    with pytest.raises(KafkaError) as raised:
        replicas.check_stamp(ControllerStamp(1, 8, 50))
    assert raised.value.error_code is ErrorCode.STALE_CONTROLLER_EPOCH
    replicas.check_stamp(ControllerStamp(1, 9, -1))  # no broker epoch given: never stale


def test_update_metadata_remembers_the_newest_controller_epoch(logs: LogManager) -> None:
    cluster = ClusterMetadata("c", -1, [])
    replicas = ReplicaManager(NODE, cluster, logs)
    replicas.update_metadata(ControllerStamp(3, 7), [_broker(1), _broker(3)], [_state(0, 1, 1)])
    assert (cluster.controller_id, replicas.controller_epoch) == (3, 7)
    with pytest.raises(KafkaError):
        replicas.update_metadata(ControllerStamp(1, 6), [], [])
    assert sorted(cluster.live_brokers) == [1, 3]


def test_concurrent_leader_and_isr_requests_take_turns(logs: LogManager) -> None:
    """Log creation waits in a worker thread; a second request for the same partition must not
    interleave with the first (Kafka's replicaStateChangeLock)."""
    cluster = ClusterMetadata("c", -1, [])
    replicas = ReplicaManager(NODE, cluster, logs)

    async def both() -> list[dict[tuple[str, int], ErrorCode]]:
        first = replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, NODE, 1)])
        second = replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 1, 2)])
        return list(await asyncio.gather(first, second))

    outcomes = asyncio.run(both())
    assert outcomes == [{("t", 0): ErrorCode.NONE}, {("t", 0): ErrorCode.NONE}]
    assert replicas.hosted[("t", 0)].leader_epoch == 2
    assert ("t", 0) not in replicas.leading
    assert replicas.leader_refusal("t", 0) == Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 2)


def test_leader_refusal_is_none_only_for_a_led_partition_at_its_epoch(logs: LogManager) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, NODE, 4)]))
    assert replicas.leader_refusal("t", 0) is None
    assert replicas.leader_refusal("t", 0, 4) is None
    assert replicas.leader_refusal("t", 0, 3) == Refusal(ErrorCode.FENCED_LEADER_EPOCH, NODE, 4)
    assert replicas.leader_refusal("t", 0, 5) == Refusal(ErrorCode.UNKNOWN_LEADER_EPOCH, NODE, 4)
    # Only -1 means "no epoch given" (Kafka's RequestUtils.getLeaderEpoch); any other negative is older.
    assert replicas.leader_refusal("t", 0, -2) == Refusal(ErrorCode.FENCED_LEADER_EPOCH, NODE, 4)
    assert replicas.leader_refusal("other", 0) == Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def test_stop_replica_of_a_partition_never_hosted_deletes_nothing_and_succeeds(logs: LogManager) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    outcome = asyncio.run(replicas.stop_replicas(ControllerStamp(1, 1), [StopReplicaPartition("t", 0, True)]))
    assert outcome == {("t", 0): ErrorCode.NONE}


def test_partial_update_fills_a_gap_as_offline_until_the_partition_is_heard_of() -> None:
    cluster = ClusterMetadata("c", -1, [])
    topic_id = uuid.uuid4()
    first = _state(2, 1, 1)
    first.topic_id = topic_id
    apply_update_metadata(cluster, 1, [_broker(1)], [first])
    topic = cluster.topic("t")
    assert topic is not None and topic.topic_id == topic_id
    assert [(p.partition, p.leader_id) for p in topic.partitions] == [(0, -1), (1, -1), (2, 1)]
    apply_update_metadata(cluster, 1, [_broker(1)], [_state(0, 1, 1)])
    assert [(p.partition, p.leader_id) for p in cluster.topic("t").partitions] == [(0, 1), (1, -1), (2, 1)]  # type: ignore[union-attr]
    assert cluster.topic_by_id(topic_id) is cluster.topic("t")


def test_brokers_on_a_listener_leave_out_those_without_it() -> None:
    cluster = ClusterMetadata("c", -1, [])
    cluster.set_live_brokers([_broker(3), _broker(1), _broker(2, "INTERNAL")])
    assert [b.node_id for b in cluster.brokers_on_listener("PLAINTEXT")] == [1, 3]
    assert [b.node_id for b in cluster.brokers_on_listener("INTERNAL")] == [2]
    assert sorted(cluster.brokers) == [1, 2, 3]  # placement checks count every live broker


def test_an_update_behind_a_leader_and_isr_does_not_take_the_hosted_epoch_back(logs: LogManager) -> None:
    cluster = ClusterMetadata("c", -1, [])
    replicas = ReplicaManager(NODE, cluster, logs)
    asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, NODE, 5)]))
    replicas.update_metadata(
        ControllerStamp(1, 1), [_broker(1), _broker(NODE)], [_state(0, 1, 4), _state(1, 1, 4)]
    )
    assert cluster.partition("t", 0).leader_epoch == 5  # type: ignore[union-attr]
    assert cluster.partition("t", 0).leader_id == NODE  # type: ignore[union-attr]
    assert cluster.partition("t", 1).leader_epoch == 4  # type: ignore[union-attr]


def test_leadership_changes_are_reported_once_applied(logs: LogManager) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    seen: list[tuple[list[tuple[str, int]], list[tuple[str, int]]]] = []
    replicas.add_leadership_listener(lambda leaders, others: seen.append((leaders, others)))
    stamp = ControllerStamp(1, 1)
    asyncio.run(replicas.become_leader_or_follower(stamp, [_state(0, NODE, 1), _state(1, 1, 1)]))
    asyncio.run(replicas.become_leader_or_follower(stamp, [_state(0, NODE, 1)]))  # stale: no change
    asyncio.run(
        replicas.stop_replicas(
            stamp, [StopReplicaPartition("t", 0, False), StopReplicaPartition("t", 1, False)]
        )
    )
    assert seen == [([("t", 0)], [("t", 1)]), ([], [("t", 0)])]


def test_the_cache_names_this_broker_leader_only_once_the_leadership_hook_heard_of_it(
    logs: LogManager,
) -> None:
    """New partitions' logs are created in worker threads, when other requests are served: the cache
    (which FindCoordinator answers from) named this broker leader of the first while the coordinators
    had not heard of it, and its coordinator answered NOT_COORDINATOR."""
    cluster = ClusterMetadata("c", -1, [])
    replicas = ReplicaManager(NODE, cluster, logs)
    told: set[tuple[str, int]] = set()
    replicas.add_leadership_listener(lambda leaders, _others: told.update(leaders))
    named_before_told: set[tuple[str, int]] = set()

    async def main() -> None:
        change = asyncio.ensure_future(
            replicas.become_leader_or_follower(
                ControllerStamp(1, 1), [_state(p, NODE, 1, topic="__consumer_offsets") for p in range(3)]
            )
        )
        while not change.done():  # what a request served meanwhile sees
            topic = cluster.topic("__consumer_offsets")
            for state in topic.partitions if topic is not None else []:
                key = ("__consumer_offsets", state.partition)
                if state.leader_id == NODE and key not in told:
                    named_before_told.add(key)
            await asyncio.sleep(0)
        await change

    asyncio.run(main())
    assert named_before_told == set()
    assert told == {("__consumer_offsets", p) for p in range(3)}


def test_a_deletion_the_disk_refuses_is_a_storage_error_and_takes_the_log_dir_offline(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    stamp = ControllerStamp(1, 1)
    asyncio.run(replicas.become_leader_or_follower(stamp, [_state(0, NODE, 1), _state(1, NODE, 1)]))
    kept = logs.get_log("t", 0)
    assert kept is not None
    original = Log.rename_dir

    def rename_dir(self: Log, target: Path) -> None:
        if self is kept:
            raise OSError("disk says no")
        original(self, target)

    monkeypatch.setattr(Log, "rename_dir", rename_dir)
    stops = [StopReplicaPartition("t", 0, True), StopReplicaPartition("t", 1, True)]
    outcome = asyncio.run(replicas.stop_replicas(stamp, stops))
    # as Kafka's renameDir under maybeHandleIOException: the log dir is offline, the replica with it,
    # and nothing more is done in it (t-1 is in the same, only, dir)
    assert outcome == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR, ("t", 1): ErrorCode.KAFKA_STORAGE_ERROR}
    assert logs.offline_log_dirs == [kept.dir.parent]
    assert logs.get_log("t", 0) is None and logs.get_log("t", 1) is None


def test_a_deletion_whose_renames_the_disk_did_not_fsync_is_a_storage_error(
    logs: LogManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log dir's fsync after the `-delete` renames failed (EIO): the rename may be undone by a power
    loss, the partition back whole. It raised out of the deletion job (it must not), and before that
    it was taken for a sync: the controller was told the replica was gone."""
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    stamp = ControllerStamp(1, 1)
    asyncio.run(replicas.become_leader_or_follower(stamp, [_state(0, NODE, 1)]))
    real = os.fsync

    def failing_on_directories(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", failing_on_directories)
    outcome = asyncio.run(replicas.stop_replicas(stamp, [StopReplicaPartition("t", 0, True)]))
    assert outcome == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}


class _Fetchers:
    """Records what the replica manager asks of the replica fetchers."""

    def __init__(self) -> None:
        self.followed: dict[tuple[str, int], int] = {}

    def add_partitions(self, partitions: list[Any]) -> None:
        for hosted in partitions:
            self.followed[(hosted.topic, hosted.partition)] = hosted.leader

    def remove_partitions(self, keys: Any) -> None:
        for key in keys:
            self.followed.pop(key, None)


def test_followed_partitions_go_to_the_fetchers_and_leave_them_on_leadership_or_stop_replica(
    logs: LogManager,
) -> None:
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    fetchers = _Fetchers()
    replicas.fetchers = fetchers

    async def run() -> None:
        await replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 1, 1), _state(1, 1, 1)])
        assert fetchers.followed == {("t", 0): 1, ("t", 1): 1}
        await replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 3, 2)])
        assert fetchers.followed == {("t", 0): 3, ("t", 1): 1}  # the new leader, at the new epoch
        await replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, NODE, 3)])
        assert fetchers.followed == {("t", 1): 1}  # a leader fetches from nobody
        await replicas.stop_replicas(ControllerStamp(1, 1), [StopReplicaPartition("t", 1, delete=False)])
        assert fetchers.followed == {}

    asyncio.run(run())


def test_a_broker_in_controlled_shutdown_does_not_fetch_the_partitions_it_was_moved_out_of(
    logs: LogManager,
) -> None:
    """Once it asked for its controlled shutdown, a broker told to follow a partition whose ISR it is not
    in (a leadership the controller moved away from it) does not fetch it: the new leader would propose
    it back into the ISR and count it in the high watermark while the controller refuses. A partition
    whose ISR it is still in is fetched, or its high watermark would wait for a follower that stopped."""
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    fetchers = _Fetchers()
    replicas.fetchers = fetchers
    moved = dataclasses.replace(_state(0, 1, 5), isr=[1])
    in_sync = dataclasses.replace(_state(1, 1, 5), isr=[1, NODE])

    async def run() -> None:
        await replicas.become_leader_or_follower(ControllerStamp(1, 1), [moved, in_sync])
        assert fetchers.followed == {("t", 0): 1, ("t", 1): 1}  # not leaving: both fetched
        replicas.leaving = True
        await replicas.become_leader_or_follower(
            ControllerStamp(1, 1),
            [dataclasses.replace(moved, leader_epoch=6), dataclasses.replace(in_sync, leader_epoch=6)],
        )
        assert fetchers.followed == {("t", 1): 1}

    asyncio.run(run())


def test_a_follower_refuses_a_leader_fetch_by_epoch_before_saying_it_is_not_leader(logs: LogManager) -> None:
    """As Kafka's Partition.getLocalLog: the epoch is checked before leadership, so a follower fetching
    at the epoch this replica is about to lead hears UNKNOWN_LEADER_EPOCH (not NOT_LEADER_OR_FOLLOWER),
    one at an older epoch FENCED_LEADER_EPOCH."""
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 1, 4)]))
    assert replicas.leader_refusal("t", 0, 5) == Refusal(ErrorCode.UNKNOWN_LEADER_EPOCH, 1, 4)
    assert replicas.leader_refusal("t", 0, 3) == Refusal(ErrorCode.FENCED_LEADER_EPOCH, 1, 4)
    assert replicas.leader_refusal("t", 0, -2) == Refusal(ErrorCode.FENCED_LEADER_EPOCH, 1, 4)
    assert replicas.leader_refusal("t", 0, 4) == Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 4)
    assert replicas.leader_refusal("t", 0) == Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 4)


def test_a_fetch_at_an_epoch_newer_than_the_hosted_one_awaits_this_brokers_leader_and_isr(
    logs: LogManager,
) -> None:
    """What the fetch handler holds a follower's fetch for: an epoch newer than the one this broker hosts
    the partition at (followed or led); not its own or an older epoch, nor a partition not hosted here."""
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
    asyncio.run(
        replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 1, 4), _state(1, NODE, 7)])
    )
    assert replicas.awaits_leader_epoch("t", 0, 5)
    assert replicas.awaits_leader_epoch("t", 1, 8)
    assert not replicas.awaits_leader_epoch("t", 0, 4)
    assert not replicas.awaits_leader_epoch("t", 1, 6)
    assert not replicas.awaits_leader_epoch("t", 2, 5)
    asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, NODE, 5)]))
    assert not replicas.awaits_leader_epoch("t", 0, 5)


def test_a_follower_serves_consumers_of_its_replicas_only_at_their_epoch(logs: LogManager) -> None:
    """KIP-392: replica_refusal lets a follower serve (a consumer's Fetch v11+), leader_refusal not."""
    cluster = ClusterMetadata("c", -1, [])
    replicas = ReplicaManager(NODE, cluster, logs)
    asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [_state(0, 1, 4)]))
    assert replicas.leader_refusal("t", 0) == Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, 1, 4)
    assert replicas.replica_refusal("t", 0) is None
    assert replicas.replica_refusal("t", 0, 4) is None
    assert replicas.replica_refusal("t", 0, 3) == Refusal(ErrorCode.FENCED_LEADER_EPOCH, 1, 4)
    assert replicas.replica_refusal("t", 0, -2) == Refusal(ErrorCode.FENCED_LEADER_EPOCH, 1, 4)
    assert replicas.replica_refusal("t", 0, 5) == Refusal(ErrorCode.UNKNOWN_LEADER_EPOCH, 1, 4)
    # A partition the cluster knows but this broker holds no replica of: NOT_LEADER_OR_FOLLOWER.
    apply_update_metadata(cluster, 1, [_broker(1), _broker(3)], [_state(1, 1, 1), _state(0, 1, 4)])
    cluster.partition("t", 1).replicas = [1, 3]  # type: ignore[union-attr]
    assert replicas.replica_refusal("t", 1).error_code is ErrorCode.NOT_LEADER_OR_FOLLOWER  # type: ignore[union-attr]
    assert replicas.replica_refusal("other", 0) == Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def test_leader_and_isr_never_hands_a_log_of_another_topic_id_to_the_partition(tmp_path: Path) -> None:
    """After a restart nothing is hosted, so the topic id check of hosted partitions saw nothing: the
    log on disk, left from a topic deleted and made again while this broker was away, was served as
    the new topic. It is set aside (`-stray`) and an empty log made, as KRaft Kafka does."""
    log_dir = tmp_path / "logs"
    first = LogManager([log_dir], LogConfig.from_mapping({}), strays=JudgedByLeaderAndIsr())
    old_id, new_id = uuid.uuid4(), uuid.uuid4()
    old = first.get_or_create_log("t", 0, topic_id=old_id)
    builder = RecordBatchBuilder(0)
    builder.append(0, None, b"old")
    old.append(bytearray(builder.build()), leader_epoch=0)
    first.shutdown()
    logs = LogManager([log_dir], LogConfig.from_mapping({}), strays=JudgedByLeaderAndIsr())
    logs.startup()
    try:
        replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs)
        state = dataclasses.replace(_state(0, NODE, 1), topic_id=new_id)
        outcome = asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [state]))
        assert outcome == {("t", 0): ErrorCode.NONE}
        hosted = replicas.hosted[("t", 0)].log
        assert (hosted.topic_id, hosted.log_end_offset) == (new_id, 0)
        assert [p.name.endswith("-stray") for p in log_dir.iterdir() if p.name.startswith("t-0.")] == [True]
    finally:
        logs.shutdown()


@pytest.mark.parametrize("topic", ["__consumer_offsets", "__transaction_state", "__share_group_state"])
def test_a_broker_told_of_an_internal_topic_by_update_metadata_marks_it_internal(topic: str) -> None:
    """`__share_group_state` was left out of the internal topics: a broker that learnt of it from the
    controller took it for a client's topic, and let clients Produce into the share coordinator's log
    (a crafted ShareSnapshot would have been replayed as state) and DeleteRecords from it."""
    cluster = ClusterMetadata("c", -1, [])
    apply_update_metadata(cluster, 1, [_broker(1)], [_state(0, 1, 1, topic=topic)])
    state = cluster.topic(topic)
    assert state is not None and state.is_internal
