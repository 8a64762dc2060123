"""What a leader does when the controller refuses its ISR change (Kafka's Partition.
handleAlterPartitionError): only OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA say the proposal was
not written, so only they put the leader back on the committed ISR. Any other refusal may answer a
retry of a proposal already written (its first answer lost): the pending, maximal ISR stays, and the
high watermark keeps counting the replica it adds, until the controller's next LeaderAndIsr. An
unexpected error is retried."""

from __future__ import annotations

import asyncio

import pytest

from odradek.partition.isr_updates import CommittedIsr, IsrUpdateFailed, ProposedIsr
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchResponse
from tests.support.controller_requests import Partition, leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)


class _RefusingController:
    """An IsrUpdater that refuses with `codes`, one per proposal, then commits."""

    def __init__(self, *codes: ErrorCode) -> None:
        self.codes = list(codes)
        self.proposals: list[ProposedIsr] = []

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        self.proposals.append(proposal)
        await asyncio.sleep(0)
        if self.codes:
            raise IsrUpdateFailed(self.codes.pop(0))
        return CommittedIsr(2, proposal.leader_epoch, proposal.new_isr, proposal.partition_epoch + 1)


async def _leading(broker: HandlerBroker, controller: _RefusingController) -> None:
    """Broker 2 leads orders-0 at epoch 3 with ISR [2, 3]; broker 1 is out of it."""
    led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2, 3])
    await broker.call(update_metadata(BROKERS, [led], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([led], {TOPIC: TOPIC_ID}), 7)
    assert broker.replicas is not None
    broker.replicas.isr_updater = controller


async def _fetch(broker: HandlerBroker, replica: int, offset: int, leader_epoch: int = 3) -> None:
    asked = FetchPartition(
        partition=0, current_leader_epoch=leader_epoch, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    response: FetchResponse = await broker.call(follower_fetch_request(replica, [asked], 0, 0), 17)
    assert response.responses[0].partitions[0].error_code == ErrorCode.NONE


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    "refusal",
    [
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_REQUEST,
    ],
)
async def test_a_refused_isr_expansion_stays_pending_until_the_next_leader_and_isr(
    replicated_member: HandlerBroker, refusal: ErrorCode
) -> None:
    broker = replicated_member
    controller = _RefusingController(refusal)
    await _leading(broker, controller)
    await broker.call(produce_request(0), 9)
    await _fetch(broker, 3, 1)
    await _fetch(broker, 1, 1)  # caught up: proposed back into the ISR, refused
    await _settle()
    assert [p.new_isr for p in controller.proposals] == [(2, 3, 1)]
    assert broker.replicas is not None
    state = broker.replicas.leading[(TOPIC, 0)].leader_state
    assert state is not None
    assert state.maximal_isr == (2, 3, 1)  # the controller may have written it: broker 1 still counts
    await broker.call(produce_request(0), 9)
    await _fetch(broker, 3, 2)
    assert broker.log(TOPIC).high_watermark == 1  # held for broker 1, at 1
    await _fetch(broker, 1, 2)
    await _settle()
    assert len(controller.proposals) == 1  # nothing more proposed while it is pending
    # the controller's LeaderAndIsr settles it
    decided = Partition(
        TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=[2, 3, 1], partition_epoch=1
    )
    await broker.call(leader_and_isr([decided], {TOPIC: TOPIC_ID}), 7)
    state = broker.replicas.leading[(TOPIC, 0)].leader_state
    assert state is not None and state.pending_isr is None and state.isr == (2, 3, 1)


@pytest.mark.parametrize("refusal", [ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA])
async def test_an_isr_expansion_the_controller_did_not_write_goes_back_to_the_committed_isr(
    replicated_member: HandlerBroker, refusal: ErrorCode
) -> None:
    broker = replicated_member
    controller = _RefusingController(refusal)
    await _leading(broker, controller)
    await broker.call(produce_request(0), 9)
    await _fetch(broker, 3, 1)
    await _fetch(broker, 1, 1)
    await _settle()
    assert broker.replicas is not None
    state = broker.replicas.leading[(TOPIC, 0)].leader_state
    assert state is not None and state.pending_isr is None and state.maximal_isr == (2, 3)
    await _fetch(broker, 1, 1)  # still in sync: proposed again, committed this time
    await _settle()
    assert [p.new_isr for p in controller.proposals] == [(2, 3, 1), (2, 3, 1)]
    assert broker.replicas.leading[(TOPIC, 0)].isr == [2, 3, 1]


async def test_an_isr_change_refused_with_an_unexpected_error_is_sent_again(
    replicated_member: HandlerBroker,
) -> None:
    broker = replicated_member
    controller = _RefusingController(ErrorCode.UNKNOWN_SERVER_ERROR)
    await _leading(broker, controller)
    await broker.call(produce_request(0), 9)
    await _fetch(broker, 3, 1)
    await _fetch(broker, 1, 1)
    assert broker.replicas is not None
    async with asyncio.timeout(5):
        while broker.replicas.leading[(TOPIC, 0)].isr != [2, 3, 1]:
            await asyncio.sleep(0.01)
    assert [p.new_isr for p in controller.proposals] == [(2, 3, 1), (2, 3, 1)]


async def test_an_isr_change_refused_again_and_again_with_an_unexpected_error_is_sent_after_doubling_pauses(
    replicated_member: HandlerBroker,
) -> None:
    # a controller answering an unexpected error every time must not be asked in a tight loop
    broker = replicated_member
    refusals = (ErrorCode.UNKNOWN_SERVER_ERROR,) * 6
    controller = _RefusingController(*refusals)
    await _leading(broker, controller)
    assert broker.replicas is not None
    leaders = broker.replicas.leaders
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    leaders.pause = pause
    await broker.call(produce_request(0), 9)
    await _fetch(broker, 3, 1)
    await _fetch(broker, 1, 1)
    async with asyncio.timeout(5):
        while broker.replicas.leading[(TOPIC, 0)].isr != [2, 3, 1]:
            await asyncio.sleep(0.01)
    assert len(controller.proposals) == len(refusals) + 1
    assert pauses == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
