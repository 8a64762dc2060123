"""KIP-392's replica selection: the rules of Kafka's RackAwareReplicaSelector and LeaderSelector, and the
leader's choice of candidates (in the ISR, holding the fetch offset, reachable on the client's listener)."""

from __future__ import annotations

import asyncio

from odradek.cluster.control_requests import ControllerStamp, PartitionLeadership
from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker
from odradek.cluster.replica_manager import ReplicaManager
from odradek.config.catalog_cluster import LEADER_SELECTOR, RACK_AWARE_SELECTOR
from odradek.partition.replica_selector import (
    NO_PREFERRED_REPLICA,
    ReplicaView,
    select_read_replica,
)
from odradek.storage.log_manager import LogManager

LEADER = ReplicaView(1, "a", 100, 0)


def test_rack_aware_selector_names_the_most_caught_up_follower_in_the_clients_rack() -> None:
    followers = [ReplicaView(2, "b", 90, 0), ReplicaView(3, "b", 95, 500), ReplicaView(4, "c", 100, 0)]
    assert select_read_replica(RACK_AWARE_SELECTOR, "b", LEADER, followers) == 3


def test_rack_aware_selector_breaks_a_log_end_tie_by_the_most_recent_catch_up() -> None:
    followers = [ReplicaView(2, "b", 100, 900), ReplicaView(3, "b", 100, 10)]
    assert select_read_replica(RACK_AWARE_SELECTOR, "b", LEADER, followers) == 3


def test_rack_aware_selector_keeps_the_client_on_a_leader_in_its_rack_or_with_no_rack_match() -> None:
    followers = [ReplicaView(2, "a", 100, 0), ReplicaView(3, "b", 100, 0)]
    assert select_read_replica(RACK_AWARE_SELECTOR, "a", LEADER, followers) == NO_PREFERRED_REPLICA
    assert select_read_replica(RACK_AWARE_SELECTOR, "z", LEADER, followers) == NO_PREFERRED_REPLICA
    assert select_read_replica(RACK_AWARE_SELECTOR, "", LEADER, followers) == NO_PREFERRED_REPLICA


def test_leader_selector_and_no_selector_never_name_a_follower() -> None:
    followers = [ReplicaView(3, "b", 100, 0)]
    assert select_read_replica(LEADER_SELECTOR, "b", LEADER, followers) == NO_PREFERRED_REPLICA
    assert select_read_replica(None, "b", LEADER, followers) == NO_PREFERRED_REPLICA


# ----- the leader's candidates ----------------------------------------------------------------------


def _live(node: int, rack: str, listener: str = "PLAINTEXT") -> LiveBroker:
    return LiveBroker(node, {listener: BrokerEndpoint(node, f"b{node}", 9092, rack)}, rack)


def _leader_of_t0(logs: LogManager, isr: list[int], live: list[LiveBroker]) -> ReplicaManager:
    cluster = ClusterMetadata("c", -1, [])
    cluster.set_live_brokers(live)
    replicas = ReplicaManager(1, cluster, logs)
    replicas.leaders.replica_selector_class = RACK_AWARE_SELECTOR
    state = PartitionLeadership(
        topic="t",
        partition=0,
        controller_epoch=1,
        leader=1,
        leader_epoch=1,
        isr=isr,
        partition_epoch=0,
        replicas=[1, 2, 3],
    )
    asyncio.run(replicas.become_leader_or_follower(ControllerStamp(1, 1), [state]))
    return replicas


def test_the_leader_names_an_in_sync_follower_of_the_clients_rack_that_holds_the_fetch_offset(
    logs: LogManager,
) -> None:
    replicas = _leader_of_t0(logs, [1, 2, 3], [_live(1, "a"), _live(2, "b"), _live(3, "c")])
    replicas.leaders.record_follower_fetch("t", 0, 2, 0)
    assert replicas.leaders.preferred_read_replica("t", 0, "b", "PLAINTEXT", 0) == 2
    # Behind the fetch offset: the follower could not serve it yet.
    assert replicas.leaders.preferred_read_replica("t", 0, "b", "PLAINTEXT", 1) == NO_PREFERRED_REPLICA
    # Not reachable on the client's listener.
    assert replicas.leaders.preferred_read_replica("t", 0, "b", "SSL", 0) == NO_PREFERRED_REPLICA


def test_a_follower_out_of_the_isr_or_not_alive_is_never_named(logs: LogManager) -> None:
    replicas = _leader_of_t0(logs, [1, 3], [_live(1, "a"), _live(2, "b"), _live(3, "c")])
    replicas.leaders.record_follower_fetch("t", 0, 2, 0)
    assert replicas.leaders.preferred_read_replica("t", 0, "b", "PLAINTEXT", 0) == NO_PREFERRED_REPLICA
    gone = _leader_of_t0(logs, [1, 2, 3], [_live(1, "a"), _live(3, "c")])
    gone.leaders.record_follower_fetch("t", 0, 2, 0)
    assert gone.leaders.preferred_read_replica("t", 0, "b", "PLAINTEXT", 0) == NO_PREFERRED_REPLICA


def test_a_follower_whose_log_starts_after_the_fetch_offset_is_never_named(logs: LogManager) -> None:
    replicas = _leader_of_t0(logs, [1, 2, 3], [_live(1, "a"), _live(2, "b"), _live(3, "c")])
    replicas.leaders.record_follower_fetch("t", 0, 2, 0, log_start_offset=0)
    assert replicas.leaders.preferred_read_replica("t", 0, "b", "PLAINTEXT", 0) == 2
    replicas.leaders.record_follower_fetch("t", 0, 2, 0, log_start_offset=1)
    assert replicas.leaders.preferred_read_replica("t", 0, "b", "PLAINTEXT", 0) == NO_PREFERRED_REPLICA
