"""What a cluster member does when its leaderships change (Kafka's ReplicaManager callbacks from
becomeLeaderOrFollower and stopReplicas: GroupCoordinator.onElection / onResignation and the like).
Registered with the replica manager by server/wiring.py as the member is built, before it serves.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from odradek.cluster.metadata import ClusterMetadata
from odradek.cluster.metadata.topic_configs import TopicConfigSync
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.handlers._common.services import Services
from odradek.partition.hosted_partition import PartitionKey

LeadershipListener = Callable[[list[PartitionKey], list[PartitionKey]], None]


def follow_leadership(
    topic_configs: TopicConfigSync,
    groups: GroupCoordinator,
    transactions: TransactionCoordinator,
    share_states: ShareCoordinator,
    services: Services,
) -> LeadershipListener:
    """A listener of the partitions this member began to lead and those it stopped leading."""

    def leadership_changed(_led: list[PartitionKey], stopped: list[PartitionKey]) -> None:
        topic_configs.apply_known()  # new replicas' logs take their topic's configs
        # The group coordinators live where __consumer_offsets partitions are led, and move with them.
        groups.refresh_leadership()
        # So does the transaction coordinator, with __transaction_state.
        transactions.leadership_changed()
        # And the share coordinator, with __share_group_state.
        share_states.leadership_changed()
        # Share partitions live with their partition's leadership: dropped where it ended.
        if services.share_partitions is not None and stopped:
            services.share_partitions.stopped_leading(_by_topic_id(services.cluster, stopped))

    return leadership_changed


def _by_topic_id(cluster: ClusterMetadata, partitions: list[PartitionKey]) -> list[tuple[uuid.UUID, int]]:
    """(topic id, partition) of the named partitions whose topic the metadata still knows."""
    known = ((cluster.topic(name), partition) for name, partition in partitions)
    return [(topic.topic_id, partition) for topic, partition in known if topic is not None]
