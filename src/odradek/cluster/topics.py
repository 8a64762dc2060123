"""Topic administration with Kafka's rules: names, partition counts, replication factors, configs.

Every change goes to disk first (storage's topic store and partition logs), then into the metadata
cache, so that what clients see always survives a restart. In single-node mode this broker leads
every partition with leader epoch 0 and is the whole replica set.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from odradek.cluster.metadata import ClusterMetadata, PartitionState, TopicState
from odradek.config.topic import TopicConfig, parse_topic_configs, resolve_topic_config
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.storage.log_manager import LogManager

MAX_NAME_LENGTH: Final = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
#: KRaft's metadata log: no client may create a topic of that name.
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"


def validate_topic_name(name: str) -> None:
    """Kafka's topic-name rules; raises KafkaError(INVALID_TOPIC_EXCEPTION) with Kafka's reason."""
    reason = None
    if not name:
        reason = "the empty string is not allowed"
    elif name in (".", ".."):
        reason = f"'{name}' is not allowed"
    elif len(name) > MAX_NAME_LENGTH:
        reason = f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    elif not _LEGAL_NAME.fullmatch(name):
        reason = f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    if reason is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


class TopicAdmin:
    def __init__(self, broker_config: Any, cluster: ClusterMetadata, logs: LogManager, node_id: int) -> None:
        self.broker_config = broker_config
        self.cluster = cluster
        self.logs = logs
        self.node_id = node_id

    # ----- start-up ------------------------------------------------------------------------------

    def load(self) -> None:
        """Fill the metadata cache from the persisted topics, creating any partition log that is missing."""
        for record in self.logs.load_topics().values():
            configs = {k: _as_string(v) for k, v in record.configs.items() if v is not None}
            state = self._state(record.name, record.topic_id, record.partitions, configs)
            for partition in range(record.partitions):
                self.logs.get_or_create_log(record.name, partition, topic_id=record.topic_id)
            self.cluster.add_topic(state)

    # ----- queries -------------------------------------------------------------------------------

    def validate_name(self, name: str) -> None:
        validate_topic_name(name)

    def topic_config(self, name: str) -> TopicConfig:
        state = self.cluster.topic(name)
        return resolve_topic_config(state.configs if state is not None else {}, self.broker_config)

    def min_insync_replicas(self, name: str) -> int:
        state = self.cluster.topic(name)
        if state is not None and "min.insync.replicas" in state.configs:
            return int(state.configs["min.insync.replicas"])
        return int(self.broker_config["min.insync.replicas"])

    # ----- changes -------------------------------------------------------------------------------

    async def auto_create(self, name: str) -> TopicState:
        """Create a topic a client asked for in Metadata (auto.create.topics.enable), with broker defaults."""
        if name in INTERNAL_TOPICS:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return self.create_topic(name, -1, -1)

    def create_topic(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        assignments: Mapping[int, Sequence[int]] | Sequence[tuple[int, Sequence[int]]] | None = None,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicState:
        """CreateTopics' rules, checked in the order Kafka's controller checks them (name, existence,
        configs, then assignment or partition count and replication factor); returns the new topic
        (not stored if validate_only). -1 partitions / replication factor means the broker default."""
        if name == CLUSTER_METADATA_TOPIC:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        validate_topic_name(name)
        if name in self.cluster.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if name in INTERNAL_TOPICS and not internal:
            # Kafka lets an admin create these; here only the coordinators do, with their own configs.
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        self._check_collision(name)
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
            replication_factor = self._check_assignments(pairs)
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
                num_partitions = int(self.broker_config["num.partitions"])
            if replication_factor == -1:
                replication_factor = int(self.broker_config["default.replication.factor"])
            self._check_placement(replication_factor)
        stored = {k: v for k, v in given.items() if v is not None}
        state = self._state(name, uuid.uuid4(), num_partitions, stored, internal=internal)
        if validate_only:
            return state
        self.logs.save_topic(name, state.topic_id, num_partitions, stored, replication_factor)
        for partition in range(num_partitions):
            self.logs.get_or_create_log(name, partition, topic_id=state.topic_id)
        self.cluster.add_topic(state)
        return state

    def delete_topic(self, name: str) -> TopicState:
        state = self.cluster.topic(name)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if state.is_internal:
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, f"Internal topic {name} cannot be deleted.")
        if not self.broker_config["delete.topic.enable"]:
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED)
        self.logs.delete_topic(name)
        self.cluster.remove_topic(name)
        return state

    def create_partitions(
        self,
        name: str,
        count: int,
        assignments: Sequence[Sequence[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicState:
        """CreatePartitions: grow a topic to `count` partitions (never shrink), Kafka's checks in order."""
        state = self.cluster.topic(name)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current = len(state.partitions)
        if count == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
        if count < current:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"The topic {name} currently has {current} partition(s); {count} would not be an increase.",
            )
        additional = count - current
        replication_factor = len(state.partitions[0].replicas) if state.partitions else 1
        if assignments is not None:
            if len(assignments) != additional:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
                    "assignment(s) were specified.",
                )
            for replicas in assignments:
                self._check_replicas(replicas, replication_factor)
        else:
            self._check_placement(replication_factor)
        if validate_only:
            return state
        self.logs.save_topic(name, state.topic_id, count, dict(state.configs), replication_factor)
        for partition in range(current, count):
            self.logs.get_or_create_log(name, partition, topic_id=state.topic_id)
            state.partitions.append(self._partition(partition))
        return state

    def alter_configs(self, name: str, configs: Mapping[str, str], *, validate_only: bool = False) -> None:
        """Replace a topic's config overrides (AlterConfigs / IncrementalAlterConfigs after merging).
        As Kafka's controller does, the configs are validated before the topic's existence is checked."""
        parse_topic_configs(dict(configs), self.broker_config)  # raises KafkaError(INVALID_CONFIG)
        state = self.cluster.topic(name)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if validate_only:
            return
        replication_factor = len(state.partitions[0].replicas) if state.partitions else 1
        self.logs.save_topic(name, state.topic_id, len(state.partitions), dict(configs), replication_factor)
        state.configs = dict(configs)

    # ----- helpers -------------------------------------------------------------------------------

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

    def _check_collision(self, name: str) -> None:
        # '.' and '_' collide in metric names, so Kafka refuses topics that differ only by them.
        folded = name.replace(".", "_")
        for existing in self.cluster.topics:
            if existing.replace(".", "_") == folded:
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {existing}",
                )

    def _check_assignments(self, assignments: Sequence[tuple[int, Sequence[int]]]) -> int:
        """Validate a manual replica assignment as Kafka's controller does; returns its replication factor."""
        replication_factor: int | None = None
        seen: set[int] = set()
        for partition, replicas in assignments:
            if partition in seen:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Found multiple manual partition assignments for partition {partition}",
                )
            seen.add(partition)
            self._check_replicas(replicas, replication_factor)
            replication_factor = len(replicas)
        if seen != set(range(len(seen))):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "partitions should be a consecutive 0-based integer sequence",
            )
        assert replication_factor is not None
        return replication_factor

    def _check_replicas(self, replicas: Sequence[int], replication_factor: int | None) -> None:
        if not replicas:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous = None
        for broker in sorted(replicas):
            if broker not in self.cluster.brokers:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, but no such broker is "
                    "registered.",
                )
            if broker == previous:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker} more than once.",
                )
            previous = broker
        if replication_factor is not None and len(replicas) != replication_factor:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but "
                "this is not consistent with previous partitions, which have "
                f"{replication_factor} replica(s).",
            )

    def _check_placement(self, replication_factor: int) -> None:
        brokers = len(self.cluster.brokers)
        if replication_factor > brokers:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                f"factor of {replication_factor} cannot be reached because only {brokers} broker(s) are "
                "registered.",
            )


def _as_string(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
