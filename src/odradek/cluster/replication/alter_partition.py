"""The broker's AlterPartition sender (Kafka's DefaultAlterPartitionManager), the `IsrUpdater` that
partition leaders submit their ISR proposals to.

Proposals wait in one queue, at most one per partition; a sender task sends every waiting proposal in
one AlterPartition request, one request at a time, to the active controller's inter-broker endpoint
as this broker's metadata cache knows it (UpdateMetadata names the controller). At the version
inter.broker.protocol.version allows (cluster/inter_broker_versions.py): up to version 3 (topic ids,
each new ISR member with a broker epoch, -1 in ZooKeeper mode as Kafka's ZooKeeper brokers send) when
every proposal has a topic id, else up to version 1 (topic names).

What cannot be answered now is sent again after a backoff, doubling up to a second, to whichever
broker is controller by then: no controller known, a connection that fails, no answer within
controller.socket.timeout.ms (or, sooner, UpdateMetadata naming another controller meanwhile), any
top-level error (NOT_CONTROLLER, STALE_BROKER_EPOCH while a new registration is on its way, ...),
and a partition the answer leaves out or answers NOT_CONTROLLER for. Every other partition error
resolves its proposal with IsrUpdateFailed(code), and success with the state the controller
committed. A retried proposal is the same proposal: if the controller wrote it before the connection
failed, it answers the current state, which is the one asked for.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from odradek.cluster.inter_broker_connection import (
    PLAINTEXT,
    InterBrokerAuthenticationError,
    InterBrokerSecurity,
    open_inter_broker_connection,
    round_trip,
)
from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.partition.isr_updates import (
    LEADER_RECOVERED,
    CommittedIsr,
    IsrUpdateFailed,
    ProposedIsr,
)
from odradek.protocol.codec_error import CodecError
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerState,
    PartitionData,
    PartitionDataResult,
    TopicData,
)
from odradek.tasks.cancelling import cancel_and_wait

log = logging.getLogger("odradek.cluster.alter_partition")

#: From version 2 on every partition needs a topic id; up to version 1 topics are named (version 1
#: adds the recovery state).
VERSION_WITH_TOPIC_IDS = 3
VERSION_WITH_NAMES = 1
#: A broker epoch this broker does not know: ZooKeeper-mode brokers learn no one else's.
UNKNOWN_BROKER_EPOCH = -1
RETRY_BACKOFF_S = 0.05
#: How often a request waiting for its answer looks whether the controller changed meanwhile.
CONTROLLER_CHECK_S = 0.1
RETRY_BACKOFF_MAX_S = 1.0

PartitionKey = tuple[str, int]


@dataclass(slots=True)
class _Pending:
    proposal: ProposedIsr
    future: asyncio.Future[CommittedIsr]


class ControllerMoved(Exception):
    """The controller changed while a request waited for its answer: send it to the new one."""


class AlterPartitionManager:
    """Implements `IsrUpdater`: `await submit(proposal)`; `start()` and `await stop()` with the broker."""

    def __init__(
        self,
        broker_id: int,
        cluster: ClusterMetadata,
        listener: str,
        broker_epoch: Callable[[], int],
        request_timeout_s: float = 30.0,
        security: InterBrokerSecurity = PLAINTEXT,
        max_version: int = VERSION_WITH_TOPIC_IDS,
    ) -> None:
        self.broker_id = broker_id
        self.cluster = cluster
        #: The inter-broker listener: the controller is reached on its endpoint for it.
        self.listener = listener
        #: This broker's current epoch (it changes when the broker registers again on a new session).
        self.broker_epoch = broker_epoch
        self.request_timeout_s = request_timeout_s
        #: The inter-broker listener's TLS and SASL.
        self.security = security
        #: The highest version inter.broker.protocol.version allows.
        self.max_version = max_version
        self.retry_backoff_s = RETRY_BACKOFF_S
        self.retry_backoff_max_s = RETRY_BACKOFF_MAX_S
        #: The proposals not answered yet, by partition: waiting, or in the request in flight.
        self._pending: dict[PartitionKey, _Pending] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._connection: tuple[str, int, asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._correlation_id = 0
        self._stopped = False
        #: How many requests got an answer (for logs and tests).
        self.requests_answered = 0

    # ----- IsrUpdater ------------------------------------------------------------------------------

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        key = (proposal.topic, proposal.partition)
        waiting = self._pending.get(key)
        if waiting is not None and not waiting.future.done():
            raise IsrUpdateFailed(
                ErrorCode.OPERATION_NOT_ATTEMPTED,
                f"an ISR change of {proposal.topic}-{proposal.partition} is already in flight",
            )
        if self._stopped:
            raise IsrUpdateFailed(ErrorCode.BROKER_NOT_AVAILABLE, "the broker is stopping")
        item = _Pending(proposal, asyncio.get_running_loop().create_future())
        self._pending[key] = item
        self._wake.set()
        return await item.future

    # ----- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"broker-{self.broker_id}-alter-partition"
        )

    async def stop(self) -> None:
        """Stop sending; proposals still waiting fail with BROKER_NOT_AVAILABLE."""
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            await cancel_and_wait(task)
        self._disconnect()
        pending, self._pending = self._pending, {}
        for item in pending.values():
            if not item.future.done():
                item.future.set_exception(
                    IsrUpdateFailed(ErrorCode.BROKER_NOT_AVAILABLE, "the broker stopped")
                )

    # ----- the sender task ---------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.retry_backoff_s
        while True:
            await self._wake.wait()
            self._wake.clear()
            while batch := self._batch():
                if await self._send(batch):
                    backoff = self.retry_backoff_s
                    continue
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.retry_backoff_max_s)

    def _batch(self) -> list[_Pending]:
        """Every proposal still waited for (a caller that gave up cancelled its future)."""
        for key, item in list(self._pending.items()):
            if item.future.done():
                del self._pending[key]
        return list(self._pending.values())

    async def _send(self, batch: list[_Pending]) -> bool:
        """Send `batch` once; True when every proposal in it was resolved, False to retry the rest."""
        endpoint = self._controller_endpoint()
        if endpoint is None:
            log.info("no controller known on listener %s: ISR changes wait", self.listener)
            return False
        highest = VERSION_WITH_TOPIC_IDS if all(i.proposal.topic_id for i in batch) else VERSION_WITH_NAMES
        version = min(highest, self.max_version)
        request = _request(self.broker_id, self.broker_epoch(), [i.proposal for i in batch], version)
        try:
            response = await self._answer(endpoint, request, version)
        except (OSError, asyncio.IncompleteReadError, TimeoutError, CodecError, ControllerMoved) as error:
            log.log(
                logging.WARNING if isinstance(error, InterBrokerAuthenticationError) else logging.INFO,
                "AlterPartition to controller %d failed (%s); retrying",
                self.cluster.controller_id,
                error,
            )
            self._disconnect()
            return False
        self.requests_answered += 1
        top_error = _error_code(response.error_code)
        if top_error != ErrorCode.NONE:
            # As Kafka: every proposal stays queued and is sent again (to the new controller, with
            # the new broker epoch, or once this broker is allowed to).
            log.warning(
                "controller %d answered AlterPartition with %s; retrying",
                self.cluster.controller_id,
                top_error.name,
            )
            if top_error == ErrorCode.NOT_CONTROLLER:
                self._disconnect()
            return False
        return self._resolve(batch, response, version)

    def _resolve(self, batch: list[_Pending], response: AlterPartitionResponse, version: int) -> bool:
        answers: dict[tuple[str | uuid.UUID, int], PartitionDataResult] = {}
        for topic in response.topics:
            name: str | uuid.UUID = topic.topic_id if version >= 2 else topic.topic_name
            for partition in topic.partitions:
                answers[(name, partition.partition_index)] = partition
        resolved_all = True
        for item in batch:
            proposal = item.proposal
            asked: str | uuid.UUID = (
                proposal.topic_id if version >= 2 and proposal.topic_id is not None else proposal.topic
            )
            answer = answers.get((asked, proposal.partition))
            code = ErrorCode.NOT_CONTROLLER if answer is None else _error_code(answer.error_code)
            if code == ErrorCode.NOT_CONTROLLER:
                resolved_all = False  # left out, or a controller that is stale for it: sent again
                continue
            key = (proposal.topic, proposal.partition)
            if self._pending.get(key) is item:
                del self._pending[key]
            if item.future.done():
                continue
            if answer is not None and code == ErrorCode.NONE:
                item.future.set_result(
                    CommittedIsr(
                        answer.leader_id, answer.leader_epoch, tuple(answer.isr), answer.partition_epoch
                    )
                )
            else:
                log.info(
                    "controller refused ISR %s for %s-%d: %s",
                    list(proposal.new_isr),
                    proposal.topic,
                    proposal.partition,
                    code.name,
                )
                item.future.set_exception(IsrUpdateFailed(code))
        return resolved_all

    # ----- the connection --------------------------------------------------------------------------

    async def _answer(
        self, endpoint: tuple[str, int], request: AlterPartitionRequest, version: int
    ) -> AlterPartitionResponse:
        """The controller's answer; ControllerMoved as soon as the metadata cache names another
        controller (a paused or cut-off one would otherwise hold every ISR change for the timeout)."""
        controller = self.cluster.controller_id
        deadline = asyncio.get_running_loop().time() + self.request_timeout_s
        exchange = asyncio.ensure_future(self._exchange(endpoint, request, version))
        try:
            while True:
                done, _ = await asyncio.wait({exchange}, timeout=CONTROLLER_CHECK_S)
                if done:
                    return exchange.result()
                if self.cluster.controller_id != controller:
                    raise ControllerMoved(
                        f"controller {controller} was replaced by {self.cluster.controller_id}"
                    )
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"no answer within {self.request_timeout_s} s")
        finally:
            if not exchange.done():
                exchange.cancel()

    def _controller_endpoint(self) -> tuple[str, int] | None:
        controller = self.cluster.live_brokers.get(self.cluster.controller_id)
        endpoint = controller.endpoints.get(self.listener) if controller is not None else None
        return None if endpoint is None else (endpoint.host, endpoint.port)

    async def _exchange(
        self, endpoint: tuple[str, int], request: AlterPartitionRequest, version: int
    ) -> AlterPartitionResponse:
        connection = self._connection
        if connection is None or connection[:2] != endpoint:
            self._disconnect()  # the controller moved: a connection to the old one is no use
            reader, writer = await open_inter_broker_connection(
                *endpoint, self.security, f"broker-{self.broker_id}-alter-partition"
            )
            self._connection = connection = (*endpoint, reader, writer)
        _, _, reader, writer = connection
        self._correlation_id += 1
        client_id = f"broker-{self.broker_id}-alter-partition"
        response: AlterPartitionResponse = await round_trip(
            reader, writer, request, version, self._correlation_id, client_id
        )
        return response

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection[3].close()


def _request(
    broker_id: int, broker_epoch: int, proposals: list[ProposedIsr], version: int
) -> AlterPartitionRequest:
    by_topic: dict[str, list[ProposedIsr]] = {}
    for proposal in proposals:
        by_topic.setdefault(proposal.topic, []).append(proposal)
    topics = []
    for name, theirs in by_topic.items():
        partitions = [
            PartitionData(
                partition_index=p.partition,
                leader_epoch=p.leader_epoch,
                new_isr=list(p.new_isr),
                new_isr_with_epochs=[
                    BrokerState(broker_id=b, broker_epoch=p.member_epochs.get(b, UNKNOWN_BROKER_EPOCH))
                    for b in p.new_isr
                ],
                leader_recovery_state=LEADER_RECOVERED,
                partition_epoch=p.partition_epoch,
            )
            for p in theirs
        ]
        topic_id = theirs[0].topic_id
        topics.append(
            TopicData(
                topic_name=name,
                topic_id=topic_id if topic_id is not None else uuid.UUID(int=0),
                partitions=partitions,
            )
        )
    return AlterPartitionRequest(broker_id=broker_id, broker_epoch=broker_epoch, topics=topics)


def _error_code(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def alter_partition_manager(
    config: BrokerConfig,
    node_id: int,
    cluster: ClusterMetadata,
    broker_epoch: Callable[[], int],
    security: InterBrokerSecurity = PLAINTEXT,
) -> AlterPartitionManager:
    """A cluster member's sender of ISR changes, as its configuration sets it up: to the controller on
    the inter-broker listener, within controller.socket.timeout.ms, at inter.broker.protocol.version's
    AlterPartition version. Started once the broker is registered (server/zookeeper_member.py)."""
    return AlterPartitionManager(
        node_id,
        cluster,
        config.inter_broker_listener_name or config.security_inter_broker_protocol,
        broker_epoch,
        request_timeout_s=config.controller_socket_timeout_ms / 1000,
        security=security,
        max_version=InterBrokerVersions.at(config.inter_broker_protocol_version).alter_partition,
    )
