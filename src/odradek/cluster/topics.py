"""Topic administration with Kafka's rules: names, partition counts, replication factors, configs.

Every change goes to disk first (storage's topic store and partition logs), then into the metadata
cache, so that what clients see always survives a restart. In single-node mode this broker leads
every partition with leader epoch 0 and is the whole replica set.

Changes run one at a time, in arrival order, as Kafka's controller applies them. Making partitions is
file work (a few fsyncs each: seconds for hundreds of partitions on a slow disk), so it runs in a
worker thread while the event loop serves every other connection. A topic being created is invisible
until its partitions are durable: Metadata names it with LEADER_NOT_AVAILABLE (`is_being_created`), a
second CreateTopics for it waits its turn and gets TOPIC_ALREADY_EXISTS. Each change runs as its own
task, so a caller that goes away (a closed connection) does not abandon it half-way.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Final, TypeVar

from odradek.cluster.config_changes import describe_change
from odradek.cluster.metadata import ClusterMetadata, PartitionState, TopicState
from odradek.cluster.topic_checks import (
    check_assignments,
    check_collision,
    check_growth,
    check_placement,
    validate_topic_name,
)
from odradek.config.broker import BrokerConfig
from odradek.config.topic import TopicConfig, parse_topic_configs, resolve_topic_config
from odradek.config.topic_catalog import TOPIC_CONFIGS
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.errors import LogStorageError
from odradek.storage.log_manager import LogManager
from odradek.storage.partition_creation import PartitionCreationJob
from odradek.storage.topic_store import TopicRecord

log = logging.getLogger(__name__)
T = TypeVar("T")
#: A manual replica assignment: partition -> broker ids, as a mapping or as pairs.
Assignments = Mapping[int, Sequence[int]] | Sequence[tuple[int, Sequence[int]]]
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
#: KRaft's metadata log: no client may create a topic of that name.
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"


class TopicAdmin:
    def __init__(
        self, broker_config: BrokerConfig, cluster: ClusterMetadata, logs: LogManager, node_id: int
    ) -> None:
        self.broker_config = broker_config
        self.cluster = cluster
        self.logs = logs
        self.node_id = node_id
        self._changes = asyncio.Lock()
        self._creating: set[str] = set()
        self._running: set[asyncio.Task[Any]] = set()

    # ----- start-up and shutdown -----------------------------------------------------------------

    def load(self) -> None:
        """Fill the metadata cache from the persisted topics, creating any partition log that is missing
        (a crash interrupted its creation). Start-up work: call it before the listeners serve."""
        for record in self.logs.load_topics().values():
            configs = {k: _as_string(v) for k, v in record.configs.items() if v is not None}
            state = self._state(record.name, record.topic_id, record.partitions, configs)
            job = self.logs.prepare_partitions(
                record.name, range(record.partitions), topic_id=record.topic_id
            )
            if job.has_work:  # a partition a crash left unmade, or a log to take the topic's id
                job.run()
                self.logs.complete_partitions(job)
            self.cluster.add_topic(state)

    async def drain(self) -> None:
        """Wait for the changes under way (at shutdown, before the logs are closed)."""
        while self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    # ----- queries -------------------------------------------------------------------------------

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

    def topic_config(self, name: str) -> TopicConfig:
        state = self.cluster.topic(name)
        return resolve_topic_config(state.configs if state is not None else {}, self.broker_config)

    async def described_configs(self, name: str) -> tuple[TopicConfig, dict[str, str]]:
        """A topic's configs and its overrides as DescribeConfigs reports them: from the metadata cache."""
        state = self.cluster.topic(name)
        overrides = dict(state.configs) if state is not None else {}
        return resolve_topic_config(overrides, self.broker_config), overrides

    def min_insync_replicas(self, name: str) -> int:
        state = self.cluster.topic(name)
        if state is not None and "min.insync.replicas" in state.configs:
            return int(state.configs["min.insync.replicas"])
        return self.broker_config.min_insync_replicas

    # ----- changes -------------------------------------------------------------------------------

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
            return self._new_topic(name, num_partitions, replication_factor, assignments, configs, internal)

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

    def _new_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: Assignments | None,
        configs: Mapping[str, str | None] | None,
        internal: bool,
    ) -> tuple[TopicState, int]:
        """The new topic CreateTopics asks for, checked (raises KafkaError); and its replication factor."""
        if name == CLUSTER_METADATA_TOPIC:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        validate_topic_name(name)
        if name in self.cluster.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if self.logs.is_topic_being_deleted(name):
            # Kafka's answer while a deletion of the name is still under way.
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion.")
        if name in INTERNAL_TOPICS and not internal:
            # Kafka lets an admin create these; here only the coordinators do, with their own configs.
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        check_collision(self.cluster, name)
        given = dict(configs or {})
        parse_topic_configs(given, self.broker_config)  # raises KafkaError(INVALID_CONFIG), nulls included
        if assignments:
            if replication_factor != -1:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but replication factor was not set to -1.",
                )
            if num_partitions != -1:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    "A manual partition assignment was specified, but numPartitions was not set to -1.",
                )
            pairs = list(assignments.items()) if isinstance(assignments, Mapping) else list(assignments)
            replication_factor = check_assignments(self.cluster, pairs)
            num_partitions = len(pairs)
        else:
            if replication_factor < -1 or replication_factor == 0:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                )
            if num_partitions < -1 or num_partitions == 0:
                raise KafkaError(
                    ErrorCode.INVALID_PARTITIONS,
                    "Number of partitions was set to an invalid non-positive value.",
                )
            if num_partitions == -1:
                num_partitions = self.broker_config.num_partitions
            if replication_factor == -1:
                replication_factor = self.broker_config.default_replication_factor
            check_placement(self.cluster, replication_factor)
        stored = {k: v for k, v in given.items() if v is not None}
        return self._state(name, uuid.uuid4(), num_partitions, stored, internal=internal), replication_factor

    async def delete_topic(self, name: str) -> TopicState:
        """DeleteTopics for one topic, in storage's crash-safe steps (storage/log_deletion.py): the
        durable mark (its failure is a KAFKA_STORAGE_ERROR, the topic untouched), then the topic leaves
        the metadata and its logs, then the directory renames. Returns once the deletion is committed;
        renames a disk error stopped are retried by the retention check and at the next start."""
        return await self._change(self._delete(name))

    async def _delete(self, name: str) -> TopicState:
        async with self._changes:
            state = self._non_internal(
                name, ErrorCode.TOPIC_DELETION_DISABLED, f"Internal topic {name} cannot be deleted."
            )
            if not self.broker_config.delete_topic_enable:
                raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED)
            try:
                await asyncio.to_thread(self.logs.mark_topic_deleted, name)
            except OSError as error:
                raise LogStorageError(f"deleting topic {name} failed: {error}") from error
            job = self.logs.take_topic_deletion(name)
            self.cluster.remove_topic(name)
            await asyncio.to_thread(job.run)  # never raises: what failed is retried
            self.logs.complete_topic_deletion(job)
            log.info("deleted topic %s (id %s)", name, state.topic_id)
            return state

    async def finish_deletions(self) -> None:
        """Retry topic deletions whose directory renames failed (the retention check calls it). In
        turn with the other changes, so a deletion under way is never run twice at once."""
        if not self.logs.unfinished_topic_deletions():
            return
        async with self._changes:
            for job in self.logs.unfinished_topic_deletions():
                await asyncio.to_thread(job.run)
                self.logs.complete_topic_deletion(job)

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
            state = self._non_internal(
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
            state.partitions.extend(self._partition(partition) for partition in range(current, count))
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

    # ----- helpers -------------------------------------------------------------------------------

    def _non_internal(self, name: str, refusal: ErrorCode, message: str) -> TopicState:
        """The topic a delete or a growth applies to: UNKNOWN_TOPIC_OR_PARTITION if there is none,
        `refusal` (with `message`) if it is internal."""
        state = self.cluster.topic(name)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if state.is_internal:
            raise KafkaError(refusal, message)
        return state

    def _state(
        self, name: str, topic_id: uuid.UUID, partitions: int, configs: dict[str, str], internal: bool = False
    ) -> TopicState:
        return TopicState(
            name=name,
            topic_id=topic_id,
            partitions=[self._partition(p) for p in range(partitions)],
            configs=configs,
            is_internal=internal or name in INTERNAL_TOPICS,
        )

    def _partition(self, partition: int) -> PartitionState:
        return PartitionState(
            partition=partition,
            leader_id=self.node_id,
            leader_epoch=0,
            replicas=[self.node_id],
            isr=[self.node_id],
        )


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
