"""Topic administration: the interface (`TopicAdmin`) and a single node's (`LocalTopicAdmin`); a
ZooKeeper cluster member's is `ZkTopicAdmin` beside it (zk_topics.py). Both check Kafka's rules with
cluster/topic_checks.py.

A single node's: every change goes to disk first (the topic store and partition logs), then into the
metadata cache, so what clients see survives a restart. It leads every partition at epoch 0, alone in
its replica set: the replica manager is told so as a controller's LeaderAndIsr would (at start-up, on
create and CreatePartitions), and as its StopReplica would on delete. Changes run one at a time, in
arrival order, as Kafka's controller applies them; making partitions (a few fsyncs each) runs in a
worker thread. A topic being created is invisible until its partitions are durable: Metadata names it
with LEADER_NOT_AVAILABLE (`is_being_created`), a second CreateTopics for it waits its turn and gets
TOPIC_ALREADY_EXISTS. Each change runs as its own task: a caller that goes away does not abandon it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from odradek.cluster.config_changes import describe_change
from odradek.cluster.metadata import ClusterMetadata, TopicState
from odradek.cluster.topic_checks import (
    INTERNAL_TOPICS,
    Assignments,
    check_growth,
    existing_non_internal,
    led_alone,
    led_alone_partition,
    plan_topic,
    validate_topic_name,
)
from odradek.config.broker import BrokerConfig
from odradek.config.topic import TopicConfig, parse_topic_configs, resolve_topic_config
from odradek.config.topic_catalog import TOPIC_CONFIGS
from odradek.partition.replica_manager import ReplicaManager
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.errors import LogStorageError
from odradek.storage.log_manager import LogManager
from odradek.storage.partition_creation import PartitionCreationJob
from odradek.storage.topic_store import TopicRecord

log = logging.getLogger(__name__)
T = TypeVar("T")


class TopicAdmin(Protocol):
    """What the admin APIs, the coordinators' internal topics and start-up ask of topic administration."""

    #: The configuration in force (a dynamic broker config change replaces it).
    broker_config: BrokerConfig

    def load(self) -> None:
        """The topics this broker knows at start-up, before the listeners serve."""

    async def drain(self) -> None: ...

    def validate_name(self, name: str) -> None: ...

    def is_being_created(self, name: str) -> bool: ...

    async def partition_count(self, name: str) -> int | None: ...

    async def described_configs(self, name: str) -> tuple[TopicConfig, dict[str, str]]: ...

    async def auto_create(self, name: str) -> TopicState: ...

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
        """CreateTopics for one topic (-1 partitions / replication factor: the broker default)."""

    async def delete_topic(self, name: str) -> TopicState: ...

    async def finish_deletions(self) -> None: ...

    async def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicState: ...

    async def alter_configs(
        self,
        name: str,
        change: Callable[[dict[str, str]], Mapping[str, str]],
        *,
        validate_only: bool = False,
    ) -> None: ...


class LocalTopicAdmin:
    """A single node's: the topics are its log dirs' (storage's topic store and partition logs)."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        cluster: ClusterMetadata,
        logs: LogManager,
        node_id: int,
        replicas: ReplicaManager,
    ) -> None:
        self.broker_config = broker_config
        self.cluster = cluster
        self.logs = logs
        self.node_id = node_id
        #: What this broker hosts and leads: a single node's partitions are led here as made.
        self.replicas = replicas
        self._changes = asyncio.Lock()
        self._creating: set[str] = set()
        self._running: set[asyncio.Task[Any]] = set()

    def load(self) -> None:
        """Fill the metadata cache from the persisted topics, creating any partition log that is missing
        (a crash interrupted its creation). Start-up work: call it before the listeners serve."""
        for record in self.logs.topic_store.load_topics().values():
            configs = {k: _as_string(v) for k, v in record.configs.items() if v is not None}
            state = led_alone(record.name, record.topic_id, record.partitions, configs, self.node_id)
            offline = self.logs.mark_missing_offline(record.name, range(record.partitions))
            job = self.logs.prepare_partitions(
                record.name,
                [p for p in range(record.partitions) if p not in offline],
                topic_id=record.topic_id,
            )
            if job.has_work:  # a partition a crash left unmade, or a log to take the topic's id
                job.run()
                self.logs.complete_partitions(job)
            self.replicas.lead_alone(record.name, record.topic_id, range(record.partitions))
            self.cluster.add_topic(state)

    async def drain(self) -> None:
        """Wait for the changes under way (at shutdown, before the logs are closed)."""
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    def validate_name(self, name: str) -> None:
        validate_topic_name(name)

    def is_being_created(self, name: str) -> bool:
        """Whether `name` is being created: its partitions are being made, it is not visible yet."""
        return name in self._creating

    async def partition_count(self, name: str) -> int | None:
        """The topic's partition count as CreatePartitions will grow it (None: no such topic), for the
        limit on the partitions one request may add."""
        state = self.cluster.topic(name)
        return None if state is None else len(state.partitions)

    async def described_configs(self, name: str) -> tuple[TopicConfig, dict[str, str]]:
        """A topic's configs and its overrides as DescribeConfigs reports them: from the metadata cache."""
        state = self.cluster.topic(name)
        overrides = dict(state.configs) if state is not None else {}
        return resolve_topic_config(overrides, self.broker_config), overrides

    async def auto_create(self, name: str) -> TopicState:
        """Create a topic a client asked for in Metadata (auto.create.topics.enable), with broker defaults."""
        if name in INTERNAL_TOPICS:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            return await self.create_topic(name, -1, -1)
        except KafkaError as error:
            existing = self.cluster.topic(name)
            if error.error_code is ErrorCode.TOPIC_ALREADY_EXISTS and existing is not None:
                return existing  # another request created it while this one waited its turn
            if error.error_code is ErrorCode.TOPIC_ALREADY_EXISTS:
                # Still being deleted: Kafka answers a retriable LEADER_NOT_AVAILABLE, not a client error.
                raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, error.error_message) from error
            raise

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
        """CreateTopics' rules, checked in the order Kafka's controller checks them (name, existence,
        configs, then assignment or partition count and replication factor); returns the new topic
        (not stored if validate_only). -1 partitions / replication factor means the broker default.
        Returns once the topic's record and partitions are durable and the topic is visible."""

        def plan() -> tuple[TopicState, int]:  # checked when the change's turn comes, not before
            return plan_topic(
                self.broker_config,
                self.cluster,
                self.logs.deletions.is_topic_being_deleted,
                self.node_id,
                name,
                num_partitions,
                replication_factor,
                assignments,
                configs,
                internal,
            )

        return await self._change(self._create(plan, validate_only))

    async def _create(self, plan: Callable[[], tuple[TopicState, int]], validate_only: bool) -> TopicState:
        async with self._changes:
            state, replication_factor = plan()
            if validate_only:
                return state
            name, count = state.name, len(state.partitions)
            record = TopicRecord(name, state.topic_id, count, replication_factor, dict(state.configs))
            job = self.logs.prepare_partitions(name, range(count), topic_id=state.topic_id, record=record)
            self._creating.add(name)
            try:
                await _run_in_thread(job, name)
            finally:
                self._creating.discard(name)
            self.logs.complete_partitions(job)
            self.replicas.lead_alone(name, state.topic_id, range(count))
            self.cluster.add_topic(state)
            configs = describe_change({}, state.configs, TOPIC_CONFIGS.get) if state.configs else "defaults"
            log.info(
                "created topic %s (id %s): %d partitions, replication factor %d, configs: %s",
                name,
                state.topic_id,
                count,
                replication_factor,
                configs,
            )
            return state

    async def delete_topic(self, name: str) -> TopicState:
        """DeleteTopics for one topic, in storage's crash-safe steps (storage/log_deletion.py): the
        durable mark (its failure is a KAFKA_STORAGE_ERROR, the topic untouched), then the topic leaves
        the metadata and its logs, then the directory renames. Returns once the deletion is committed; a
        rename a disk error stopped takes its log dir offline, and the next start finishes it there."""
        return await self._change(self._delete(name))

    async def _delete(self, name: str) -> TopicState:
        async with self._changes:
            refusal = ErrorCode.TOPIC_DELETION_DISABLED
            message = f"Internal topic {name} cannot be deleted."
            state = existing_non_internal(self.cluster, name, refusal, message)
            if not self.broker_config.delete_topic_enable:
                raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED)
            try:
                await asyncio.to_thread(self.logs.deletions.mark_topic_deleted, name)
            except OSError as error:
                raise LogStorageError(f"deleting topic {name} failed: {error}") from error
            job = self.logs.deletions.take_topic_deletion(name)
            self.cluster.remove_topic(name)
            self.replicas.delete_partitions(name, range(len(state.partitions)))
            await asyncio.to_thread(job.run)  # never raises: what failed is retried
            self.logs.deletions.complete_topic_deletion(job)
            log.info("deleted topic %s (id %s)", name, state.topic_id)
            return state

    async def finish_deletions(self) -> None:
        """Retry topic deletions whose mark could not be removed (the retention check calls it). In
        turn with the other changes, so a deletion under way is never run twice at once."""
        if not self.logs.deletions.unfinished_topic_deletions():
            return
        async with self._changes:
            for job in self.logs.deletions.unfinished_topic_deletions():
                await asyncio.to_thread(job.run)
                self.logs.deletions.complete_topic_deletion(job)

    async def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicState:
        """CreatePartitions: grow a topic to `count` partitions (never shrink), Kafka's checks in order.
        The new partitions are visible once they are durable."""
        return await self._change(self._create_partitions(name, count, assignments, validate_only))

    async def _create_partitions(
        self, name: str, count: int, assignments: Sequence[Sequence[int]] | None, validate_only: bool
    ) -> TopicState:
        async with self._changes:
            # Kafka's controller allows it, but a group's coordinator is its partition's leader by hash
            # modulo the partition count: more partitions would strand every group's state.
            state = existing_non_internal(
                self.cluster,
                name,
                ErrorCode.INVALID_REQUEST,
                f"Cannot increase the number of partitions of internal topic {name}: its partitions "
                "are assigned by hashing over their count.",
            )
            current = len(state.partitions)
            replication_factor = check_growth(self.cluster, state, count, assignments)
            if validate_only:
                return state
            record = TopicRecord(name, state.topic_id, count, replication_factor, dict(state.configs))
            job = self.logs.prepare_partitions(
                name, range(current, count), topic_id=state.topic_id, record=record
            )
            await _run_in_thread(job, name)
            self.logs.complete_partitions(job)
            self.replicas.lead_alone(name, state.topic_id, range(current, count))
            state.partitions.extend(led_alone_partition(p, self.node_id) for p in range(current, count))
            log.info("topic %s now has %d partitions (was %d)", name, count, current)
            return state

    async def alter_configs(
        self,
        name: str,
        change: Callable[[dict[str, str]], Mapping[str, str]],
        *,
        validate_only: bool = False,
    ) -> None:
        """Replace a topic's config overrides with `change(current overrides)` (AlterConfigs replaces,
        IncrementalAlterConfigs merges), applied to the overrides as they are when this change's turn
        comes. As Kafka's controller does, the configs are validated before the topic's existence is
        checked. The store is written in a worker thread; the logs take the configs once it is."""
        await self._change(self._alter_configs(name, change, validate_only))

    async def _alter_configs(
        self, name: str, change: Callable[[dict[str, str]], Mapping[str, str]], validate_only: bool
    ) -> None:
        async with self._changes:
            state = self.cluster.topic(name)
            configs = dict(change(dict(state.configs) if state is not None else {}))
            parse_topic_configs(dict(configs), self.broker_config)  # raises KafkaError(INVALID_CONFIG)
            if state is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
            if validate_only:
                return
            replication_factor = len(state.partitions[0].replicas) if state.partitions else 1
            log_config = self.logs.topic_log_config(configs)
            try:  # an fsynced file replaced: not on the event loop
                await asyncio.to_thread(
                    self.logs.topic_store.save_topic,
                    name,
                    state.topic_id,
                    len(state.partitions),
                    configs,
                    replication_factor,
                )
            except OSError as error:
                raise LogStorageError(f"storing the configs of topic {name} failed: {error}") from error
            self.logs.apply_topic_config(name, log_config)
            log.info(
                "configs of topic %s changed: %s",
                name,
                describe_change(state.configs, configs, TOPIC_CONFIGS.get),
            )
            state.configs = configs

    async def _change(self, change: Coroutine[Any, Any, T]) -> T:
        """Run a change as its own task: it completes even if the caller stops waiting for it."""
        task = asyncio.get_running_loop().create_task(change)
        self._running.add(task)
        task.add_done_callback(_forget)
        task.add_done_callback(self._running.discard)
        return await asyncio.shield(task)


async def _run_in_thread(job: PartitionCreationJob, topic: str) -> None:
    """The job's file work in a worker thread; a failed file operation is a KAFKA_STORAGE_ERROR."""
    try:
        await asyncio.to_thread(job.run)
    except OSError as error:
        raise LogStorageError(f"creating partitions of {topic} failed: {error}") from error


def _forget(task: asyncio.Task[Any]) -> None:
    """Retrieve a change's outcome, so one whose caller went away logs no 'never retrieved' warning."""
    if not task.cancelled():
        task.exception()


def _as_string(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
