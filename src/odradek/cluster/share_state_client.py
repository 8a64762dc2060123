"""The share partitions' persister on a cluster member (Kafka's DefaultStatePersister and
PersisterStateManager): each call goes to the share coordinator of its key, in-process when this
broker leads the key's `__share_group_state` partition, else as the matching *ShareGroupState request
to the broker that does.

The coordinator is found from this broker's metadata cache, which is what FindCoordinator with key
type SHARE would answer (a request to ourselves saved). Answers that a coordinator moved or is not
ready (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, a broker that
cannot be reached) are retried after a backoff, as Kafka's: 1 s doubling to at most 30 s, ±20 %
jitter, five attempts, then the last error is the caller's. At most `max_outstanding` calls wait for
another broker at a time; more are refused COORDINATOR_NOT_AVAILABLE at once (not retried here), so a
coordinator that stalls cannot pile up this broker's memory.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, Protocol, TypeVar

from odradek.cluster.broker_client import BrokerConnections, BrokerUnreachable, inter_broker_endpoint
from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.partition.share.persister import (
    DeliveryState,
    SharePartitionKey,
    SharePersister,
    ShareState,
    ShareStateError,
    ShareStateSummary,
    StateBatch,
)
from odradek.protocol.error_codes import ErrorCode, KafkaError
from odradek.protocol.messages import delete_share_group_state as delete
from odradek.protocol.messages import initialize_share_group_state as init
from odradek.protocol.messages import read_share_group_state as read
from odradek.protocol.messages import read_share_group_state_summary as summary
from odradek.protocol.messages import write_share_group_state as write
from odradek.protocol.schema import Request

log = logging.getLogger("odradek.cluster.share_state")
T = TypeVar("T")

RETRIABLE: Final = frozenset(
    {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)
#: Kafka's PersisterStateManager: REQUEST_BACKOFF_MS, REQUEST_BACKOFF_MAX_MS, the attempts, the jitter.
BACKOFF_MS: Final = 1000
BACKOFF_MAX_MS: Final = 30_000
ATTEMPTS: Final = 5
JITTER: Final = 0.2
#: Calls at most waiting for other brokers' coordinators at once.
MAX_OUTSTANDING: Final = 1024


class TooManyOutstanding(ShareStateError):
    """More calls wait for other brokers than `max_outstanding`: refused at once, not retried here (the
    share partition retries it as any COORDINATOR_NOT_AVAILABLE, later)."""

    def __init__(self) -> None:
        super().__init__(
            ErrorCode.COORDINATOR_NOT_AVAILABLE, "too many share-state requests waiting for other brokers"
        )


class ShareCoordinatorHere(SharePersister, Protocol):
    """This broker's share coordinator, as the persister sees it."""

    def coordinator_node(self, key: str) -> int | None:
        """The broker coordinating `key` (a FindCoordinator key); None while unknown."""
        ...


class ShareStatePersister:
    """The SharePersister the share partitions of a broker use, wherever their coordinator is."""

    def __init__(
        self,
        node_id: int,
        local: ShareCoordinatorHere,
        config: BrokerConfig,
        cluster: ClusterMetadata,
        security: InterBrokerSecurity = PLAINTEXT,
        *,
        backoff_ms: int = BACKOFF_MS,
        max_outstanding: int = MAX_OUTSTANDING,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.node_id = node_id
        self.local = local
        self.config = config
        self.cluster = cluster
        self.connections = BrokerConnections.of_broker(config, node_id, "share-persister", security)
        self.backoff_ms = backoff_ms
        self.max_outstanding = max_outstanding
        self.outstanding = 0
        self.sleep = sleep

    def close(self) -> None:
        self.connections.close()

    # ----- SharePersister ---------------------------------------------------------------------------

    async def initialize(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        request = init.InitializeShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                init.InitializeStateData(
                    topic_id=key.topic_id,
                    partitions=[
                        init.PartitionData(
                            partition=key.partition, state_epoch=state_epoch, start_offset=start_offset
                        )
                    ],
                )
            ],
        )

        async def remote(node: int) -> None:
            response: init.InitializeShareGroupStateResponse = await self._send(node, request, 0)
            _raise_for(_the_partition(response.results))

        await self._call(key, lambda: self.local.initialize(key, state_epoch, start_offset), remote)

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> ShareState:
        request = read.ReadShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                read.ReadStateData(
                    topic_id=key.topic_id,
                    partitions=[read.PartitionData(partition=key.partition, leader_epoch=leader_epoch)],
                )
            ],
        )

        async def remote(node: int) -> ShareState:
            response: read.ReadShareGroupStateResponse = await self._send(node, request, 0)
            answer: read.PartitionResult = _the_partition(response.results)
            _raise_for(answer)
            return ShareState(
                answer.state_epoch,
                leader_epoch,  # v0 does not say: the caller's, now on record (as the in-process answer)
                answer.start_offset,
                tuple(
                    StateBatch(
                        b.first_offset, b.last_offset, DeliveryState(b.delivery_state), b.delivery_count
                    )
                    for b in answer.state_batches
                ),
            )

        return await self._call(key, lambda: self.local.read(key, leader_epoch), remote)

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        request = write.WriteShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                write.WriteStateData(
                    topic_id=key.topic_id,
                    partitions=[
                        write.PartitionData(
                            partition=key.partition,
                            state_epoch=state_epoch,
                            leader_epoch=leader_epoch,
                            start_offset=start_offset,
                            delivery_complete_count=delivery_complete_count,
                            state_batches=[
                                write.StateBatch(
                                    first_offset=b.first_offset,
                                    last_offset=b.last_offset,
                                    delivery_state=int(b.delivery_state),
                                    delivery_count=b.delivery_count,
                                )
                                for b in batches
                            ],
                        )
                    ],
                )
            ],
        )

        async def remote(node: int) -> None:
            response: write.WriteShareGroupStateResponse = await self._send(node, request, 1)
            _raise_for(_the_partition(response.results))

        await self._call(
            key,
            lambda: self.local.write(
                key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count
            ),
            remote,
        )

    async def delete(self, key: SharePartitionKey) -> None:
        request = delete.DeleteShareGroupStateRequest(
            group_id=key.group_id,
            topics=[
                delete.DeleteStateData(
                    topic_id=key.topic_id, partitions=[delete.PartitionData(partition=key.partition)]
                )
            ],
        )

        async def remote(node: int) -> None:
            response: delete.DeleteShareGroupStateResponse = await self._send(node, request, 0)
            _raise_for(_the_partition(response.results))

        await self._call(key, lambda: self.local.delete(key), remote)

    async def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> ShareStateSummary:
        request = summary.ReadShareGroupStateSummaryRequest(
            group_id=key.group_id,
            topics=[
                summary.ReadStateSummaryData(
                    topic_id=key.topic_id,
                    partitions=[summary.PartitionData(partition=key.partition, leader_epoch=leader_epoch)],
                )
            ],
        )

        async def remote(node: int) -> ShareStateSummary:
            response: summary.ReadShareGroupStateSummaryResponse = await self._send(node, request, 1)
            answer: summary.PartitionResult = _the_partition(response.results)
            _raise_for(answer)
            return ShareStateSummary(
                answer.state_epoch, answer.leader_epoch, answer.start_offset, answer.delivery_complete_count
            )

        return await self._call(key, lambda: self.local.read_summary(key, leader_epoch), remote)

    # ----- routing and retries ----------------------------------------------------------------------

    async def _call(
        self,
        key: SharePartitionKey,
        here: Callable[[], Awaitable[T]],
        there: Callable[[int], Awaitable[T]],
    ) -> T:
        """`here` when this broker coordinates `key`, else `there` with the coordinator's id, retrying
        the answers that say the coordinator moved or is not ready."""
        coordinator_key = key.coordinator_key
        attempt = 0
        while True:
            attempt += 1
            try:
                try:
                    node = self.local.coordinator_node(coordinator_key)
                except KafkaError as error:  # a key too long to hash into a record
                    raise ShareStateError(error.error_code, error.error_message) from None
                if node is None:
                    raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                if node == self.node_id:
                    return await here()
                return await self._outstanding(there(node))
            except TooManyOutstanding:
                raise
            except ShareStateError as error:
                if error.error_code not in RETRIABLE or attempt >= ATTEMPTS:
                    raise
                log.debug(
                    "share state of %s: %s, attempt %d", coordinator_key, error.error_code.name, attempt
                )
            await self.sleep(self._backoff_s(attempt))

    def _backoff_s(self, attempt: int) -> float:
        backoff = min(self.backoff_ms << (attempt - 1), BACKOFF_MAX_MS)
        return backoff * random.uniform(1 - JITTER, 1 + JITTER) / 1000

    async def _outstanding(self, call: Awaitable[T]) -> T:
        if self.outstanding >= self.max_outstanding:
            if asyncio.iscoroutine(call):
                call.close()
            raise TooManyOutstanding
        self.outstanding += 1
        try:
            return await call
        finally:
            self.outstanding -= 1

    async def _send(self, node: int, request: Request, version: int) -> T:
        endpoint = inter_broker_endpoint(self.config, self.cluster, node)
        if endpoint is None:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"broker {node} is not known")
        try:
            response: T = await self.connections.to(node, endpoint).request(request, version)
        except BrokerUnreachable as error:
            raise ShareStateError(ErrorCode.COORDINATOR_NOT_AVAILABLE, str(error)) from None
        return response


A = TypeVar("A")
A_co = TypeVar("A_co", covariant=True)


class _TopicAnswer(Protocol[A_co]):
    @property
    def partitions(self) -> Sequence[A_co]: ...


def _the_partition(results: Sequence[_TopicAnswer[A]]) -> A:
    """The one partition's result of a one-key request; a coordinator that left it out (Kafka 4.4
    answers an empty group id with no results) is UNKNOWN_SERVER_ERROR, never an IndexError."""
    if len(results) != 1 or len(results[0].partitions) != 1:
        raise ShareStateError(
            ErrorCode.UNKNOWN_SERVER_ERROR, "the share coordinator did not answer the partition"
        )
    return results[0].partitions[0]


class _PartitionAnswer(Protocol):
    @property
    def error_code(self) -> int: ...

    @property
    def error_message(self) -> str | None: ...


def _raise_for(answer: _PartitionAnswer) -> None:
    if answer.error_code != ErrorCode.NONE:
        raise ShareStateError(ErrorCode(answer.error_code), answer.error_message)
