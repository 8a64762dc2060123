"""Which brokers are down and which partitions are in trouble, from Metadata answers."""

from __future__ import annotations

from odradek.console.data.cluster import Broker, BrokerMemory, ClusterState, PartitionState, TopicState
from odradek.console.pages.overview import under_min_isr


def _broker(broker_id: int, up: bool = True) -> Broker:
    return Broker(broker_id, "127.0.0.1", 9090 + broker_id, None, broker_id == 1, up)


def test_a_broker_seen_before_and_missing_now_is_down() -> None:
    memory = BrokerMemory()
    memory.brokers([_broker(1), _broker(2)], set(), 1)
    brokers = memory.brokers([_broker(1)], set(), 1)
    assert [(b.id, b.up, b.address) for b in brokers] == [
        (1, True, "127.0.0.1:9091"),
        (2, False, "127.0.0.1:9092"),
    ]


def test_a_replica_on_a_broker_never_seen_is_shown_down_without_an_address() -> None:
    brokers = BrokerMemory().brokers([_broker(1)], {1, 3}, 1)
    assert [(b.id, b.up, b.address) for b in brokers] == [(1, True, "127.0.0.1:9091"), (3, False, "unknown")]


def test_a_broker_back_up_is_up_again() -> None:
    memory = BrokerMemory()
    memory.brokers([_broker(1), _broker(2)], set(), 1)
    memory.brokers([_broker(1)], set(), 1)
    assert all(b.up for b in memory.brokers([_broker(1), _broker(2)], set(), 1))


def test_offline_under_replicated_and_under_min_isr() -> None:
    healthy = PartitionState("t", 0, 1, (1, 2, 3), (1, 2, 3))
    lagging = PartitionState("t", 1, 1, (1, 2, 3), (1,))
    offline = PartitionState("t", 2, -1, (1, 2, 3), ())
    state = ClusterState("id", 1, (), {"t": TopicState("t", False, (healthy, lagging, offline))})
    assert [p.partition for p in state.partitions if p.offline] == [2]
    assert [p.partition for p in state.partitions if p.under_replicated] == [1, 2]
    assert [p.partition for p in under_min_isr(state, {"t": {"min.insync.replicas": "2"}})] == [1, 2]
    assert under_min_isr(state, {}) == []
    assert state.topics["t"].replication_factor == 3
