"""odradek's own clients' view of a cluster: connections by node (TLS and SASL as their security
says), the coordinator of a key, partition leaders from Metadata; `retrying` runs a request until its
error is final (or its deadline passes)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from odradek.client.connection import BrokerConnection, parse_bootstrap
from odradek.client.security import ClientSecurity
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData

E = ErrorCode
T = TypeVar("T")
#: Errors that clear by themselves: asked again after a pause.
RETRIABLE = frozenset(
    {
        E.COORDINATOR_LOAD_IN_PROGRESS,
        E.COORDINATOR_NOT_AVAILABLE,
        E.NOT_COORDINATOR,
        E.CONCURRENT_TRANSACTIONS,
        E.NOT_LEADER_OR_FOLLOWER,
        E.LEADER_NOT_AVAILABLE,
        E.UNKNOWN_TOPIC_OR_PARTITION,
        E.NOT_ENOUGH_REPLICAS,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        E.REQUEST_TIMED_OUT,
        E.UNSTABLE_OFFSET_COMMIT,
    }
)
_RETRY_PAUSE_S = 0.05


class RequestError(RuntimeError):
    """A request the broker refused with a final error (or a retriable one past the deadline)."""

    def __init__(self, what: str, error: ErrorCode) -> None:
        super().__init__(f"{what}: {error.name}")
        self.error = error


class Cluster:
    """Connections by node, the coordinator of a key, partition leaders."""

    def __init__(self, bootstrap: str, timeout_s: float, security: ClientSecurity) -> None:
        self.timeout_s = timeout_s
        self.security = security
        self.bootstrap = parse_bootstrap(bootstrap)
        self.connections: dict[tuple[str, int], BrokerConnection] = {}
        self.nodes: dict[int, tuple[str, int]] = {}

    def any(self) -> BrokerConnection:
        failure: OSError | None = None
        for address in itertools.chain(self.connections, self.bootstrap):
            try:
                return self.to(address)
            except OSError as error:
                failure = error
        raise ConnectionError(f"no broker of {self.bootstrap} answers: {failure}")

    def to(self, address: tuple[str, int]) -> BrokerConnection:
        connection = self.connections.get(address)
        if connection is None:
            connection = BrokerConnection(*address, self.timeout_s, self.security)
            self.connections[address] = connection
        return connection

    def node(self, node_id: int) -> BrokerConnection:
        if node_id not in self.nodes:
            self.metadata([])
        return self.to(self.nodes[node_id])

    def drop(self, connection: BrokerConnection) -> None:
        for address, known in list(self.connections.items()):
            if known is connection:
                del self.connections[address]
        connection.close()

    def metadata(self, topics: Sequence[str] | None, auto_create: bool = True) -> Any:
        """Metadata v8 of `topics` (None: every topic the login may describe)."""
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=auto_create,
        )
        response = self.any().request(request, 8)
        self.nodes = {b.node_id: (b.host, b.port) for b in response.brokers}
        return response

    def coordinator(self, key: str, key_type: int) -> BrokerConnection:
        answer = self.any().request(FindCoordinatorRequest(key=key, key_type=key_type), 3)
        error = ErrorCode(answer.error_code)
        if error is not E.NONE:
            raise RequestError(f"FindCoordinator for {key!r}", error)
        self.nodes[answer.node_id] = (answer.host, answer.port)
        return self.to((answer.host, answer.port))

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections.clear()


def retrying(
    cluster: Cluster, what: str, timeout_s: float, attempt: Callable[[], ErrorCode | tuple[ErrorCode, T]]
) -> T | None:
    """Run `attempt` until its error is not retriable (or `timeout_s` passes); raise a final error."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            outcome = attempt()
        except OSError as failure:  # a broker restarting: reconnect on the next attempt
            cluster.close()
            if time.monotonic() > deadline:
                raise ConnectionError(f"{what}: {failure}") from failure
            time.sleep(_RETRY_PAUSE_S * 4)
            continue
        error, value = outcome if isinstance(outcome, tuple) else (outcome, None)
        if error is E.NONE:
            return value
        if error not in RETRIABLE or time.monotonic() > deadline:
            raise RequestError(what, error)
        time.sleep(_RETRY_PAUSE_S)


#: Produce v9: the newest every Kafka 2.8+ broker serves, flexible, with record-level errors.
PRODUCE_VERSION = 9


def produce_to_leader(
    cluster: Cluster,
    tp: tuple[str, int],
    batch: bytes,
    leader: int,
    timeout_s: float,
    transactional_id: str | None = None,
) -> None:
    """One batch to a partition's leader with acks=all, retried (the leader looked up again after
    NOT_LEADER_OR_FOLLOWER) until `timeout_s`; -1 for `leader`: look it up first. An idempotent retry
    the leader already appended (DUPLICATE_SEQUENCE_NUMBER) is done."""
    topic, partition = tp
    request = ProduceRequest(
        transactional_id=transactional_id,
        acks=-1,
        timeout_ms=int(timeout_s * 1000),
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )
    state = {"leader": leader}

    def attempt() -> ErrorCode:
        if state["leader"] < 0:
            found = cluster.metadata([topic]).topics[0]
            if found.error_code:
                return ErrorCode(found.error_code)
            led = (p.leader_id for p in found.partitions if p.partition_index == partition)
            state["leader"] = next(led, -1)
            if state["leader"] < 0:
                return E.LEADER_NOT_AVAILABLE
        answer = cluster.node(state["leader"]).request(request, PRODUCE_VERSION)
        error = ErrorCode(answer.responses[0].partition_responses[0].error_code)
        if error is E.DUPLICATE_SEQUENCE_NUMBER:
            return E.NONE
        if error in (E.NOT_LEADER_OR_FOLLOWER, E.LEADER_NOT_AVAILABLE):
            state["leader"] = -1
        return error

    retrying(cluster, f"Produce to {topic}-{partition}", timeout_s, attempt)
