"""The controller as the broker's handlers ask it, in both modes (`services.controller`).

A cluster member's is its controller elector (cluster/controller/controller.py, `KafkaController`):
built by server/wiring.py with the broker's other parts, started once the broker is registered, and
active while it is the controller. A single node's is `ClusterOfOneController`: the controller of a
cluster of one, always active, as Kafka 3.9's lone broker is its own controller. So the handlers ask
"are you the active controller?" and "do this", never which mode the broker runs in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from odradek.cluster.controller.context import TopicPartition
from odradek.cluster.controller.events import ControlledShutdownResult
from odradek.cluster.controller.isr_changes import AlterPartitionResult, IsrChangeRequest
from odradek.cluster.controller.leader_elections import elect_in_a_cluster_of_one
from odradek.cluster.controller.producer_ids import AllocateProducerIdsResult
from odradek.cluster.controller.reassignment import reassign_in_a_cluster_of_one
from odradek.cluster.controller.replica_assignment import ReassignmentError, ReplicaAssignment
from odradek.cluster.metadata import ClusterMetadata
from odradek.protocol.error_codes import ErrorCode


class Controller(Protocol):
    """What the controller's APIs (handlers/controller_requests.py, reassignments.py,
    update_features.py) and AlterConfigs ask of this broker's controller."""

    @property
    def is_active(self) -> bool: ...

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout: float = 30.0
    ) -> ControlledShutdownResult: ...

    async def elect_leaders(
        self, election_type: int, partitions: list[TopicPartition] | None, timeout: float = 60.0
    ) -> dict[TopicPartition, ErrorCode]: ...

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
        timeout: float = 60.0,
    ) -> dict[TopicPartition, ReassignmentError]: ...

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None, timeout: float = 60.0
    ) -> dict[TopicPartition, ReplicaAssignment]: ...

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: list[IsrChangeRequest], timeout: float = 30.0
    ) -> AlterPartitionResult: ...

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, timeout: float = 30.0
    ) -> AllocateProducerIdsResult: ...

    def set_unclean_leader_election_enable(self, enabled: bool) -> None: ...


class ClusterOfOneController:
    """A single node's controller: it leads every partition and is its only replica, so no election is
    ever needed and a reassignment can only name the broker a partition is on (done at once, none ever
    in progress). ControlledShutdown, AlterPartition and AllocateProducerIds come only from other
    brokers (the registry serves them only in a cluster): were one asked, no other broker exists to be
    answered, so it is refused as by a broker that is not the controller."""

    is_active = True

    def __init__(self, cluster: ClusterMetadata, node_id: int) -> None:
        self.cluster = cluster
        self.node_id = node_id

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int, timeout: float = 30.0
    ) -> ControlledShutdownResult:
        return ControlledShutdownResult(ErrorCode.NOT_CONTROLLER, [])

    async def elect_leaders(
        self, election_type: int, partitions: list[TopicPartition] | None, timeout: float = 60.0
    ) -> dict[TopicPartition, ErrorCode]:
        return elect_in_a_cluster_of_one(self.cluster, self.node_id, election_type, partitions)

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
        timeout: float = 60.0,
    ) -> dict[TopicPartition, ReassignmentError]:
        return reassign_in_a_cluster_of_one(
            self.cluster, self.node_id, reassignments, allow_replication_factor_change
        )

    async def list_partition_reassignments(
        self, partitions: list[TopicPartition] | None, timeout: float = 60.0
    ) -> dict[TopicPartition, ReplicaAssignment]:
        return {}  # a reassignment in a cluster of one is done as it is asked

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: list[IsrChangeRequest], timeout: float = 30.0
    ) -> AlterPartitionResult:
        return AlterPartitionResult(ErrorCode.NOT_CONTROLLER, [])

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, timeout: float = 30.0
    ) -> AllocateProducerIdsResult:
        return AllocateProducerIdsResult(ErrorCode.NOT_CONTROLLER)

    def set_unclean_leader_election_enable(self, enabled: bool) -> None:
        pass  # every partition's only replica is in its ISR: an unclean election never has a candidate
