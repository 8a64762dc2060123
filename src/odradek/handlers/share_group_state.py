"""The share coordinator's inter-broker APIs (KIP-932): InitializeShareGroupState (83),
ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86) and
ReadShareGroupStateSummary (87), answered by this broker's share coordinator
(coordinator/share/coordinator.py) for the keys whose `__share_group_state` partition it leads.

Version notes:
- Initialize, Read and Delete v0; Write and ReadSummary v0-1 (v1 adds DeliveryCompleteCount, KIP-1226,
  stored as the records' tagged field). All flexible.
- Each (group, topic id, partition) is one step, answered in its own partition result: NOT_COORDINATOR
  or COORDINATOR_LOAD_IN_PROGRESS (the sender finds the coordinator again, or retries), the shard's
  refusals (INVALID_REQUEST, FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION) and
  a failed write's COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR, as Kafka's ShareCoordinatorService.
- An empty group id is answered with no results at all, as Kafka 4.4's ShareCoordinatorService does.
- A refused partition's result carries the fields' defaults (state epoch 0, start offset 0), as Kafka's.
- A state batch of a delivery state Kafka does not define (only 0 available, 1 acquired, 2
  acknowledged, 4 archived are) is INVALID_REQUEST; Kafka 4.4 stores it as given, which its share
  partitions never send and no reader could interpret.
- These are brokers' requests: with an authorizer they need CLUSTER_ACTION on the cluster, else every
  partition is answered CLUSTER_AUTHORIZATION_FAILED (Kafka's KafkaApis).
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.handlers._common.authorization import authorize_cluster
from odradek.handlers._common.context import RequestContext
from odradek.handlers._common.registry import handles
from odradek.partition.share.persister import DeliveryState, SharePartitionKey, ShareStateError, StateBatch
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import delete_share_group_state as delete
from odradek.protocol.messages import initialize_share_group_state as init
from odradek.protocol.messages import read_share_group_state as read
from odradek.protocol.messages import read_share_group_state_summary as summary
from odradek.protocol.messages import write_share_group_state as write
from odradek.security.acl import AclOperation

R = TypeVar("R")
T = TypeVar("T")


class _Partition(Protocol):
    @property
    def partition(self) -> int: ...


P = TypeVar("P", bound=_Partition)
P_co = TypeVar("P_co", bound=_Partition, covariant=True)


class _Topic(Protocol[P_co]):
    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partitions(self) -> Sequence[P_co]: ...


#: Steps of one request run at most this many at a time (a request may name thousands of partitions).
_CONCURRENT_STEPS = 64


@handles(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0)
async def handle_initialize_share_group_state(
    request: init.InitializeShareGroupStateRequest, context: RequestContext
) -> init.InitializeShareGroupStateResponse:
    async def one(
        coordinator: ShareCoordinator, key: SharePartitionKey, p: init.PartitionData
    ) -> init.PartitionResult:
        await coordinator.initialize(key, p.state_epoch, p.start_offset)
        return init.PartitionResult(partition=key.partition, error_code=ErrorCode.NONE)

    results = await _steps(context, request.group_id, request.topics, one)
    return init.InitializeShareGroupStateResponse(
        results=_results(results, init.InitializeStateResult, init.PartitionResult)
    )


@handles(ApiKey.READ_SHARE_GROUP_STATE, 0, 0)
async def handle_read_share_group_state(
    request: read.ReadShareGroupStateRequest, context: RequestContext
) -> read.ReadShareGroupStateResponse:
    async def one(
        coordinator: ShareCoordinator, key: SharePartitionKey, p: read.PartitionData
    ) -> read.PartitionResult:
        state = await coordinator.read(key, p.leader_epoch)
        return read.PartitionResult(
            partition=key.partition,
            error_code=ErrorCode.NONE,
            state_epoch=state.state_epoch,
            start_offset=state.start_offset,
            state_batches=[
                read.StateBatch(
                    first_offset=b.first_offset,
                    last_offset=b.last_offset,
                    delivery_state=int(b.delivery_state),
                    delivery_count=b.delivery_count,
                )
                for b in state.batches
            ],
        )

    results = await _steps(context, request.group_id, request.topics, one)
    return read.ReadShareGroupStateResponse(
        results=_results(results, read.ReadStateResult, read.PartitionResult)
    )


@handles(ApiKey.WRITE_SHARE_GROUP_STATE, 0, 1)
async def handle_write_share_group_state(
    request: write.WriteShareGroupStateRequest, context: RequestContext
) -> write.WriteShareGroupStateResponse:
    async def one(
        coordinator: ShareCoordinator, key: SharePartitionKey, p: write.PartitionData
    ) -> write.PartitionResult:
        batches = tuple(_batch(b) for b in p.state_batches)
        await coordinator.write(
            key, p.state_epoch, p.leader_epoch, p.start_offset, batches, p.delivery_complete_count
        )
        return write.PartitionResult(partition=key.partition, error_code=ErrorCode.NONE)

    results = await _steps(context, request.group_id, request.topics, one)
    return write.WriteShareGroupStateResponse(
        results=_results(results, write.WriteStateResult, write.PartitionResult)
    )


@handles(ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0)
async def handle_delete_share_group_state(
    request: delete.DeleteShareGroupStateRequest, context: RequestContext
) -> delete.DeleteShareGroupStateResponse:
    async def one(
        coordinator: ShareCoordinator, key: SharePartitionKey, _p: delete.PartitionData
    ) -> delete.PartitionResult:
        await coordinator.delete(key)
        return delete.PartitionResult(partition=key.partition, error_code=ErrorCode.NONE)

    results = await _steps(context, request.group_id, request.topics, one)
    return delete.DeleteShareGroupStateResponse(
        results=_results(results, delete.DeleteStateResult, delete.PartitionResult)
    )


@handles(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1)
async def handle_read_share_group_state_summary(
    request: summary.ReadShareGroupStateSummaryRequest, context: RequestContext
) -> summary.ReadShareGroupStateSummaryResponse:
    async def one(
        coordinator: ShareCoordinator, key: SharePartitionKey, p: summary.PartitionData
    ) -> summary.PartitionResult:
        state = await coordinator.read_summary(key, p.leader_epoch)
        return summary.PartitionResult(
            partition=key.partition,
            error_code=ErrorCode.NONE,
            state_epoch=state.state_epoch,
            leader_epoch=state.leader_epoch,
            start_offset=state.start_offset,
            delivery_complete_count=state.delivery_complete_count,
        )

    results = await _steps(context, request.group_id, request.topics, one)
    return summary.ReadShareGroupStateSummaryResponse(
        results=_results(results, summary.ReadStateSummaryResult, summary.PartitionResult)
    )


# ----- shared -----------------------------------------------------------------------------------------

Outcome = tuple[int, str | None, R | None]
T_co = TypeVar("T_co", covariant=True)
R_co = TypeVar("R_co", covariant=True)


class _PartitionResult(Protocol[R_co]):
    """An API's PartitionResult made with an error (the other fields their defaults)."""

    def __call__(self, *, partition: int, error_code: int, error_message: str | None) -> R_co: ...


class _TopicResult(Protocol[T_co, R]):
    """An API's result for a topic."""

    def __call__(self, *, topic_id: uuid.UUID, partitions: list[R]) -> T_co: ...


async def _steps(
    context: RequestContext,
    group_id: str,
    topics: Sequence[_Topic[P]],
    step: Callable[[ShareCoordinator, SharePartitionKey, P], Awaitable[R]],
) -> list[tuple[uuid.UUID, list[tuple[int, Outcome[R]]]]]:
    """Run `step` for every partition of every topic, at most _CONCURRENT_STEPS at a time; each
    outcome is (error code, message, the step's answer)."""
    refusal = _refusal(context)
    coordinator = context.services.share_coordinator
    if not group_id and refusal is None:
        return []  # as Kafka's: no results at all

    async def run(topic_id: uuid.UUID, data: P) -> Outcome[R]:
        if refusal is not None:
            return refusal[0], refusal[1], None
        if coordinator is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, None
        key = SharePartitionKey(group_id, topic_id, data.partition)
        try:
            return ErrorCode.NONE, None, await step(coordinator, key, data)
        except ShareStateError as error:
            return error.error_code, error.message or error.error_code.message, None

    # A window of steps at a time: a request may name millions of partitions, and a task each at once
    # would hold far more memory than the request did.
    work = [(topic.topic_id, data) for topic in topics for data in topic.partitions]
    outcomes: list[Outcome[R]] = []
    for start in range(0, len(work), _CONCURRENT_STEPS):
        window = work[start : start + _CONCURRENT_STEPS]
        outcomes.extend(await asyncio.gather(*(run(topic_id, data) for topic_id, data in window)))
    answers: list[tuple[uuid.UUID, list[tuple[int, Outcome[R]]]]] = []
    done = iter(zip(work, outcomes, strict=True))
    for topic in topics:
        answers.append(
            (
                topic.topic_id,
                [
                    (data.partition, outcome)
                    for (_, data), outcome in itertools.islice(done, len(topic.partitions))
                ],
            )
        )
    return answers


def _results(
    results: list[tuple[uuid.UUID, list[tuple[int, Outcome[R]]]]],
    topic_result: _TopicResult[T, R],
    partition_result: _PartitionResult[R],
) -> list[T]:
    """The API's results by topic: each partition's step answer, or its error with the other fields'
    defaults (state epoch 0, start offset 0, as Kafka's)."""
    return [
        topic_result(
            topic_id=topic_id,
            partitions=[
                answer
                if answer is not None
                else partition_result(partition=p, error_code=code, error_message=message)
                for p, (code, message, answer) in partitions
            ],
        )
        for topic_id, partitions in results
    ]


def _refusal(context: RequestContext) -> tuple[ErrorCode, str] | None:
    if not authorize_cluster(context, AclOperation.CLUSTER_ACTION):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
    return None


def _batch(b: write.StateBatch) -> StateBatch:
    try:
        state = DeliveryState(b.delivery_state)
    except ValueError:
        raise ShareStateError(
            ErrorCode.INVALID_REQUEST, f"Unknown delivery state {b.delivery_state}."
        ) from None
    return StateBatch(b.first_offset, b.last_offset, state, b.delivery_count)
