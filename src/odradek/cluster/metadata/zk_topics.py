"""Topic administration in a ZooKeeper cluster (topics.py's `TopicAdmin`): the same checks as a
single node's (cluster/topic_checks.py), written to ZooKeeper.

As Kafka's ZkAdminManager/AdminZkClient: CreateTopics places the replicas over the live brokers
(`assignment`), writes /config/topics/<t> then /brokers/topics/<t>; the controller sees the new topic,
creates its partition states and tells the brokers (LeaderAndIsr, UpdateMetadata). CreatePartitions
grows the assignment in place (compare-and-set on its znode version; the topic is the one ZooKeeper
holds, as this broker may not have heard of it yet), DeleteTopics writes the /admin/delete_topics
marker. Nothing is created locally: this broker learns about topics, like every
other broker, from the controller. CreateTopics answers once the new topic has leaders in this
broker's metadata (Kafka's DelayedCreatePartitions) or, after `CREATION_WAIT_S`, with the assignment
written anyway: clients retry Metadata until the controller has caught up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence

from kazoo.exceptions import BadVersionError

from odradek.cluster.assignment import (
    BrokerMetadata,
    ReplicaAssignment,
    assign_replicas_to_brokers,
    explicit_topic_assignment,
    new_partitions_assignment,
)
from odradek.cluster.metadata import ClusterMetadata, PartitionState, TopicState
from odradek.cluster.topic_checks import (
    INTERNAL_TOPICS,
    Assignments,
    existing_non_internal,
    plan_topic,
    validate_topic_name,
)
from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.configs import change_entity_config, entity_config
from odradek.cluster.zookeeper.errors import TopicAlreadyExistsError, TopicAlreadyMarkedForDeletionError
from odradek.cluster.zookeeper.topic_znodes import TopicAssignmentZnode
from odradek.cluster.zookeeper.topics import create_topic, mark_topic_for_deletion, topic_assignment
from odradek.config.broker import BrokerConfig
from odradek.config.topic import (
    TopicConfig,
    parse_topic_configs,
    resolve_stored_topic_config,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError

log = logging.getLogger(__name__)

#: How long CreateTopics waits for the controller to give the new partitions leaders (Kafka waits up to
#: the request's timeout; clients retry, so a shorter bound costs nothing but a Metadata round trip).
CREATION_WAIT_S = 10.0
_POLL_S = 0.02


class ZkTopicAdmin:
    """A ZooKeeper cluster member's topic administration: changes go to ZooKeeper, the controller does
    the rest. The metadata cache is the controller's UpdateMetadata; this broker's logs are its
    LeaderAndIsr and StopReplica (cluster/replica_manager.py)."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        cluster: ClusterMetadata,
        zk: ZooKeeperClient,
    ) -> None:
        self.broker_config = broker_config
        self.cluster = cluster
        self.zk = zk

    def load(self) -> None:
        """Nothing to load: the topics are the controller's, sent with UpdateMetadata."""

    async def drain(self) -> None:
        """Nothing under way to wait for: every change is ZooKeeper's once answered."""

    def validate_name(self, name: str) -> None:
        validate_topic_name(name)

    def is_being_created(self, name: str) -> bool:
        """Never: a topic written to ZooKeeper is the controller's to make visible."""
        return False

    async def finish_deletions(self) -> None:
        """Nothing to retry: a cluster member's logs are deleted by StopReplica, not by this admin."""

    def live_brokers(self) -> list[BrokerMetadata]:
        return [BrokerMetadata(b.node_id, b.rack) for b in self.cluster.live_brokers.values()]

    async def auto_create(self, name: str) -> TopicState:
        """Metadata's auto-creation: the assignment is written and, as Kafka, the client is answered
        LEADER_NOT_AVAILABLE at once (it asks again once the controller has elected leaders)."""
        if name in INTERNAL_TOPICS:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            await self._write_topic(name, -1, -1, None, None, validate_only=False, internal=False)
        except KafkaError as error:
            if error.error_code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                raise
        existing = self.cluster.topic(name)
        if existing is not None:
            return existing
        raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"Topic {name} is being created.")

    async def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: Assignments | None = None,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicState:
        state = await self._write_topic(
            name,
            num_partitions,
            replication_factor,
            assignments,
            configs,
            validate_only=validate_only,
            internal=internal,
        )
        if validate_only:
            return state
        return await self._wait_for_leaders(name) or state

    async def _write_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: Assignments | None,
        configs: Mapping[str, str | None] | None,
        *,
        validate_only: bool,
        internal: bool,
    ) -> TopicState:
        """CreateTopics' checks, the placement, then /config/topics and /brokers/topics written."""
        validate_topic_name(name)  # before the name goes into a znode path
        # As AdminZkClient.validateTopicCreate, ZooKeeper's marker: the controller deletes the topic
        # (this broker's logs know of no deletion), and it removes the marker last.
        marked = await asyncio.to_thread(self.zk.read, paths.delete_topic_marker(name)) is not None
        planned, rf = plan_topic(
            self.broker_config,
            self.cluster,
            lambda _: marked,
            -1,  # no leader until the controller elects one (`_with_placement`)
            name,
            num_partitions,
            replication_factor,
            assignments,
            configs,
            internal,
        )
        if assignments:
            pairs = list(assignments.items()) if isinstance(assignments, Mapping) else list(assignments)
            placement: ReplicaAssignment = explicit_topic_assignment(pairs)
        else:
            placement = assign_replicas_to_brokers(self.live_brokers(), len(planned.partitions), rf)
        state = _with_placement(planned, placement)
        if validate_only:
            return state
        znode = TopicAssignmentZnode(placement, topic_id=state.topic_id)
        try:
            await asyncio.to_thread(create_topic, self.zk, name, znode, dict(state.configs))
        except TopicAlreadyExistsError as error:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.") from error
        log.info(
            "created topic %s (id %s) in ZooKeeper: %d partitions, replication factor %d",
            name,
            state.topic_id,
            len(placement),
            rf,
        )
        return state

    async def _wait_for_leaders(self, name: str) -> TopicState | None:
        """The topic as this broker's metadata has it once every partition has a leader, or None."""
        deadline = asyncio.get_running_loop().time() + CREATION_WAIT_S
        while asyncio.get_running_loop().time() < deadline:
            known = self.cluster.topic(name)
            if known is not None and known.partitions and all(p.leader_id >= 0 for p in known.partitions):
                return known
            await asyncio.sleep(_POLL_S)
        return None

    async def delete_topic(self, name: str) -> TopicState:
        refusal, message = ErrorCode.TOPIC_DELETION_DISABLED, f"Internal topic {name} cannot be deleted."
        state = existing_non_internal(self.cluster, name, refusal, message)
        if not self.broker_config.delete_topic_enable:
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED)
        # Kafka answers a second deletion of the same topic with success as well.
        with contextlib.suppress(TopicAlreadyMarkedForDeletionError):
            await asyncio.to_thread(mark_topic_for_deletion, self.zk, name)
        log.info("topic %s (id %s) marked for deletion", name, state.topic_id)
        return state

    async def partition_count(self, name: str) -> int | None:
        """From ZooKeeper, as create_partitions reads the topic: the metadata cache may not know it yet."""
        found = await asyncio.to_thread(topic_assignment, self.zk, name)
        return None if found is None else len(found[0].partitions)

    async def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicState:
        if name in INTERNAL_TOPICS:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Cannot increase the number of partitions of internal topic {name}: its partitions "
                "are assigned by hashing over their count.",
            )
        if await asyncio.to_thread(self.zk.read, paths.delete_topic_marker(name)) is not None:
            raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is queued for deletion.")
        # As Kafka's ZkAdminManager, the topic is what ZooKeeper holds: this broker's metadata learns
        # of a new topic only once the controller has elected its leaders, which for thousands of
        # partitions is well after CreateTopics was answered.
        found = await asyncio.to_thread(topic_assignment, self.zk, name)
        if found is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current, version = found
        state = self.cluster.topic(name) or _with_placement(
            TopicState(name, current.topic_id or uuid.UUID(int=0), []),
            {partition: list(replicas) for partition, replicas in current.partitions.items()},
        )
        if current.adding_replicas or current.removing_replicas:
            # as Kafka: the controller rewrites this znode while a reassignment runs
            raise KafkaError(
                ErrorCode.REASSIGNMENT_IN_PROGRESS,
                f"A partition reassignment is in progress for the topic '{name}'.",
            )
        added = new_partitions_assignment(name, current.partitions, self.live_brokers(), count, assignments)
        if validate_only:
            return state
        grown = TopicAssignmentZnode(
            {**current.partitions, **added},
            topic_id=current.topic_id,
            adding_replicas=current.adding_replicas,
            removing_replicas=current.removing_replicas,
        )
        try:  # as AdminZkClient.writeTopicPartitionAssignment: only over the version just read
            await asyncio.to_thread(
                self.zk.write, self.zk.kazoo.set_async, paths.topic(name), grown.serialize(), version
            )
        except BadVersionError as error:
            raise KafkaError(
                ErrorCode.REASSIGNMENT_IN_PROGRESS, f"The assignment of {name} changed meanwhile."
            ) from error
        log.info("topic %s grown to %d partitions in ZooKeeper", name, count)
        return state

    async def described_configs(self, name: str) -> tuple[TopicConfig, dict[str, str]]:
        """Read from ZooKeeper, as Kafka's ZkConfigRepository: an AlterConfigs answered by any broker is
        described at once, before this broker has read its /config/changes notification (the metadata
        cache, which Produce and the logs use, follows that notification)."""
        overrides = await asyncio.to_thread(entity_config, self.zk, paths.TOPIC_CONFIG, name)
        return resolve_stored_topic_config(overrides, self.broker_config), overrides

    async def alter_configs(
        self,
        name: str,
        change: Callable[[dict[str, str]], Mapping[str, str]],
        *,
        validate_only: bool = False,
    ) -> None:
        # As AdminZkClient.validateTopicConfig: the topic is what ZooKeeper holds (this broker's metadata
        # may not know a topic just created), and one that does not exist is so whatever its configs.
        if await asyncio.to_thread(self.zk.read, paths.topic(name)) is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        current = await asyncio.to_thread(entity_config, self.zk, paths.TOPIC_CONFIG, name)
        configs = dict(change(dict(current)))
        parse_topic_configs(dict(configs), self.broker_config)  # raises KafkaError(INVALID_CONFIG)
        if validate_only:
            return
        # Every broker (this one included) applies it when it reads the /config/changes notification.
        await asyncio.to_thread(change_entity_config, self.zk, paths.TOPIC_CONFIG, name, configs)


def _with_placement(planned: TopicState, placement: ReplicaAssignment) -> TopicState:
    """The planned topic with its replicas placed; no leader until the controller elects one."""
    return TopicState(
        name=planned.name,
        topic_id=planned.topic_id or uuid.uuid4(),
        partitions=[
            PartitionState(partition=p, leader_id=-1, leader_epoch=-1, replicas=list(r), isr=list(r))
            for p, r in sorted(placement.items())
        ],
        configs=planned.configs,
        is_internal=planned.is_internal or planned.name in INTERNAL_TOPICS,
    )
