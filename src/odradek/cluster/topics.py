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
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str) -> None:
    """Kafka's topic-name rules; raises KafkaError(INVALID_TOPIC_EXCEPTION) with the reason."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}",
        )
    if not _LEGAL_NAME.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'",
        )


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
        assignments: Mapping[int, Sequence[int]] | None = None,
        configs: Mapping[str, str | None] | None = None,
        *,
        validate_only: bool = False,
        internal: bool = False,
    ) -> TopicState:
        """CreateTopics' rules and error codes; returns the new topic (not stored if validate_only)."""
        validate_topic_name(name)
        if name in self.cluster.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if name in INTERNAL_TOPICS and not internal:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Creation of internal topic {name} is prohibited.")
        self._check_collision(name)
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
            num_partitions, replication_factor = self._check_assignments(assignments, start=0)
        if num_partitions == -1:
            num_partitions = int(self.broker_config["num.partitions"])
        if replication_factor == -1:
            replication_factor = int(self.broker_config["default.replication.factor"])
        if num_partitions <= 0:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if replication_factor <= 0:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
            )
        brokers = len(self.cluster.brokers)
        if replication_factor > brokers:
            raise KafkaError(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): "
                f"The target replication factor "
                f"of {replication_factor} cannot be reached because only {brokers} broker(s) are registered.",
            )
        given = {k: v for k, v in (configs or {}).items() if v is not None}
        parse_topic_configs(given, self.broker_config)  # raises KafkaError(INVALID_CONFIG)
        state = self._state(name, uuid.uuid4(), num_partitions, dict(given), internal=internal)
        if validate_only:
            return state
        self.logs.save_topic(name, state.topic_id, num_partitions, given, replication_factor)
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
        """CreatePartitions: grow a topic to `count` partitions (never shrink)."""
        state = self.cluster.topic(name)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        current = len(state.partitions)
        if count < current:
            raise KafkaError(
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {current} partitions, which is higher than the requested {count}.",
            )
        if count == current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        if assignments is not None:
            if len(assignments) != count - current:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Increasing the number of partitions by {count - current} "
                    f"but {len(assignments)} assignments provided.",
                )
            self._check_assignments(dict(enumerate(assignments, start=current)), start=current)
        if validate_only:
            return state
        self.logs.save_topic(name, state.topic_id, count, dict(state.configs))
        for partition in range(current, count):
            self.logs.get_or_create_log(name, partition, topic_id=state.topic_id)
            state.partitions.append(self._partition(partition))
        return state

    def alter_configs(self, name: str, configs: Mapping[str, str], *, validate_only: bool = False) -> None:
        """Replace a topic's config overrides (AlterConfigs / IncrementalAlterConfigs after merging)."""
        state = self.cluster.topic(name)
        if state is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        parse_topic_configs(dict(configs), self.broker_config)  # raises KafkaError(INVALID_CONFIG)
        if validate_only:
            return
        self.logs.save_topic(name, state.topic_id, len(state.partitions), dict(configs))
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

    def _check_assignments(self, assignments: Mapping[int, Sequence[int]], start: int) -> tuple[int, int]:
        """Validate a manual replica assignment; returns (partition count, replication factor)."""
        partitions = sorted(assignments)
        if partitions != list(range(start, start + len(partitions))):
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Partitions should be a consecutive 0-based integer sequence",
            )
        factors = {len(replicas) for replicas in assignments.values()}
        if len(factors) != 1:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions should have the same number of replicas"
            )
        for partition, replicas in assignments.items():
            if len(set(replicas)) != len(replicas):
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Duplicate brokers not allowed in replica assignment: {replicas}",
                )
            unknown = [b for b in replicas if b not in self.cluster.brokers]
            if unknown or not replicas:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Partition {partition} has replicas on unknown brokers {unknown or replicas}",
                )
        return len(partitions), factors.pop()


def _as_string(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)
