"""The controller's view of replicas on a failed log dir (Kafka's replicasOnOfflineDirs): a replica a
live broker answered KAFKA_STORAGE_ERROR for leaves the ISR, never leads (whatever the election), and
UpdateMetadata names it offline; the broker's next registration brings it back."""

from __future__ import annotations

from odradek.cluster.controller import requests
from odradek.cluster.controller.context import ControllerContext, LiveBroker, PartitionState, TopicPartition
from odradek.cluster.controller.log_dir_failures import leader_and_isr_without_offline_replica
from odradek.cluster.zookeeper.broker_znode import BrokerRegistration
from odradek.cluster.zookeeper.topic_znodes import PartitionStateZnode

TP = TopicPartition("t", 0)
OTHER = TopicPartition("t", 1)


def _context() -> ControllerContext:
    context = ControllerContext(epoch=5, epoch_zk_version=4)
    context.live_brokers = {b: LiveBroker(BrokerRegistration(b, (), 0), 10 + b) for b in (1, 2, 3)}
    context.assignments = {"t": {0: [1, 2, 3], 1: [1, 2, 3]}}
    context.replicas_on_offline_dirs = {1: {TP}}
    return context


def _state(leader: int, isr: list[int]) -> PartitionState:
    return PartitionState(PartitionStateZnode(leader, 7, isr, 4), partition_epoch=9)


def test_a_replica_on_a_failed_log_dir_is_not_eligible_to_lead_that_partition_only() -> None:
    context = _context()
    assert context.eligible_for(TP) == {2, 3}
    assert context.eligible_for(OTHER) == {1, 2, 3}
    assert not context.is_replica_online(1, TP) and context.is_replica_online(1, OTHER)


def test_the_leader_on_a_failed_log_dir_gives_way_to_the_next_in_sync_replica() -> None:
    decided = leader_and_isr_without_offline_replica(_context(), 1, TP, _state(1, [1, 2, 3]), unclean=False)
    assert decided == (2, [2, 3], True)


def test_a_follower_on_a_failed_log_dir_leaves_the_isr_and_the_leader_stays() -> None:
    context = _context()
    context.replicas_on_offline_dirs = {3: {TP}}
    decided = leader_and_isr_without_offline_replica(context, 3, TP, _state(1, [1, 2, 3]), unclean=False)
    assert decided == (1, [1, 2], False)


def test_the_last_in_sync_replica_on_a_failed_log_dir_leaves_the_partition_leaderless() -> None:
    # no other replica is in sync: offline, as Kafka (its ISR keeps the last member)
    decided = leader_and_isr_without_offline_replica(_context(), 1, TP, _state(1, [1]), unclean=False)
    assert decided == (-1, [1], False)


def test_update_metadata_names_a_replica_on_a_failed_log_dir_offline() -> None:
    context = _context()
    context.states = {TP: _state(2, [2, 3]), OTHER: _state(1, [1, 2, 3])}
    request = requests.update_metadata(context, 2, 3, [TP, OTHER]).request
    offline = {
        p.partition_index: p.offline_replicas for t in request.topic_states for p in t.partition_states
    }
    assert offline == {0: [1], 1: []}
