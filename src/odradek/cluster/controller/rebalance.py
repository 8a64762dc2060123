"""Which partitions the automatic preferred leader election moves (KafkaController.
checkAndTriggerAutoLeaderRebalance, `auto.leader.rebalance.enable`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from odradek.cluster.controller.context import TopicPartition


def imbalanced_partitions(
    replicas: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
    imbalance_percentage: int,
    eligible: Collection[int],
) -> list[TopicPartition]:
    """For each broker, the partitions it should lead (it is their replicas[0]) but does not; when
    their share of the broker's preferred partitions is above `leader.imbalance.per.broker.percentage`
    and the broker can lead (`eligible`: live, not shutting down), those partitions are returned
    (whether their preferred replica is in sync is decided by the election itself)."""
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp, assignment in replicas.items():
        if assignment and tp in leaders:
            by_preferred.setdefault(assignment[0], []).append(tp)
    candidates: list[TopicPartition] = []
    for broker_id, preferred in sorted(by_preferred.items()):
        not_led = [tp for tp in preferred if leaders[tp] != broker_id]
        ratio = len(not_led) / len(preferred)
        if ratio > imbalance_percentage / 100 and broker_id in eligible:
            candidates += not_led
    return sorted(candidates)
