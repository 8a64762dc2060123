"""What the coordinators ask of the rest of the broker, as small Protocols: the metadata they read,
the creation of their internal topics, WriteTxnMarkers to other brokers, and producer ids. The
implementations are in cluster/ and server/, passed to the coordinators' constructors by server/;
coordinator/ never imports cluster/ (docs/architecture.md, rule 2)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Protocol

from odradek.protocol.messages.write_txn_markers import WriteTxnMarkersRequest, WriteTxnMarkersResponse


class PartitionView(Protocol):
    """A partition as the metadata cache has it: who leads it (-1: no leader)."""

    @property
    def partition(self) -> int: ...

    @property
    def leader_id(self) -> int: ...


class TopicView(Protocol):
    """A topic as the metadata cache has it."""

    @property
    def name(self) -> str: ...

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sequence[PartitionView]: ...

    @property
    def is_internal(self) -> bool: ...


class MetadataView(Protocol):
    """The broker's metadata cache, as the coordinators read it (cluster/metadata.py's ClusterMetadata)."""

    @property
    def topics(self) -> Mapping[str, TopicView]: ...

    @property
    def topic_creations(self) -> int:
        """How many times a topic was added: a regex resolved at a lower count may miss a topic."""
        ...

    def topic(self, name: str) -> TopicView | None: ...

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicView | None: ...

    def partition(self, topic: str, partition: int) -> PartitionView | None: ...


class InternalTopics(Protocol):
    """Creates the coordinators' internal topics (`__consumer_offsets`, `__transaction_state`,
    `__share_group_state`); how many replicas one gets is the implementation's to decide (a single node
    cuts the replication factor to itself, a cluster refuses more replicas than live brokers)."""

    @property
    def created_at_startup(self) -> bool:
        """Whether the group and transaction coordinators create their topics when they start (a single
        node: no FindCoordinator may come before a client needs them) rather than on the first
        FindCoordinator, as Kafka's brokers do."""
        ...

    async def create(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str]
    ) -> str | None:
        """Create the internal topic: None when it exists now (made, or there already), else why it
        cannot be made yet (the caller tries again on the next FindCoordinator)."""
        ...


class BrokerUnavailable(Exception):
    """Another broker could not be reached, or did not answer in time (its connection is dropped)."""


class TxnMarkerSender(Protocol):
    """WriteTxnMarkers to the brokers leading a transaction's partitions elsewhere (the inter-broker
    client; server/txn_marker_sender.py)."""

    def reachable(self, broker: int) -> bool:
        """Whether the metadata lists `broker` alive with an endpoint on the inter-broker listener."""
        ...

    async def write_txn_markers(
        self, broker: int, request: WriteTxnMarkersRequest, version: int
    ) -> WriteTxnMarkersResponse:
        """`broker`'s answer to `request`; BrokerUnavailable if it cannot be reached or is not in time."""
        ...

    def close(self) -> None:
        """Drop the connections (the coordinator stops)."""
        ...


class ProducerIdSource(Protocol):
    """Where producer ids come from (cluster/metadata/producer_ids.py): the log dir's blocks on a
    single node, ZooKeeper's in a cluster."""

    async def generate(self) -> int: ...
