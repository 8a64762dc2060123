"""A cluster member's replica manager makes its replica fetchers (Kafka's ReplicaManager creates its
ReplicaFetcherManager), with the follower's throttle and the broker epoch of its registration: nothing
assigns them after construction, and a LeaderAndIsr that makes this broker a follower hands the
partition to them at once."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership
from odradek.cluster.inter_broker_connection import PLAINTEXT
from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.replica_manager import ReplicaManager
from odradek.cluster.replication.fetcher_wiring import FollowerSettings
from odradek.cluster.replication.replication_quota import ReplicationQuotas
from odradek.config.broker import BrokerConfig
from odradek.protocol.error_codes import ErrorCode
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr

NODE, LEADER = 2, 1


def test_the_replica_manager_makes_its_fetchers_and_hands_them_what_it_follows(tmp_path: Path) -> None:
    config = BrokerConfig({"node.id": str(NODE), "log.dirs": str(tmp_path)}, warn_unknown=False)
    logs = LogManager([tmp_path], strays=JudgedByLeaderAndIsr())
    logs.startup()
    quotas = ReplicationQuotas.of(NODE, lambda: config)
    replicas = ReplicaManager(
        NODE,
        ClusterMetadata("c", -1, []),
        logs,
        followers=FollowerSettings(config, lambda: config, quotas.follower, PLAINTEXT),
    )
    replicas.broker_epoch = 42
    manager = replicas.fetcher_manager
    assert manager is not None and replicas.fetchers is manager
    assert manager.context.quota is quotas.follower and manager.context.broker_epoch() == 42
    follow = PartitionLeadership(
        topic="t",
        partition=0,
        controller_epoch=1,
        leader=LEADER,
        leader_epoch=1,
        isr=[LEADER, NODE],
        partition_epoch=0,
        replicas=[LEADER, NODE],
    )

    async def main() -> None:
        outcome = await replicas.become_leader_or_follower(ControllerStamp(1, 1), [follow])
        assert outcome == {("t", 0): ErrorCode.NONE}
        assert set(manager._where) == {("t", 0)}
        await manager.shutdown()

    try:
        asyncio.run(main())
    finally:
        logs.shutdown()


def test_the_replica_managers_leaders_send_isr_changes_to_the_updater_it_was_built_with(
    tmp_path: Path,
) -> None:
    """As Kafka's ReplicaManager takes its AlterPartitionManager: the wiring makes the sender (started
    once the broker is registered) and passes it in, nothing assigns it afterwards."""
    logs = LogManager([tmp_path], strays=JudgedByLeaderAndIsr())
    sender = object()
    replicas = ReplicaManager(NODE, ClusterMetadata("c", -1, []), logs, isr_updater=sender)  # type: ignore[arg-type]
    assert replicas.isr_updater is sender and replicas.leaders.isr_updater is sender
