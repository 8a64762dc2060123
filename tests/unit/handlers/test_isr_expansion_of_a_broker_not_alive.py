"""A leader proposes into the ISR only a follower whose broker the controller reports alive (Kafka's
Partition.canAddReplicaToIsr → isReplicaIsrEligible: in ZooKeeper mode, the metadata cache's live
brokers).

A broker whose ZooKeeper session expired is dropped from the live brokers by the controller's
UpdateMetadata while its fetchers may go on fetching (it registers again later). The controller
refuses its ISR expansion (INELIGIBLE_REPLICA), the leader drops the proposal, and the next fetch,
still caught up, proposed it again: an AlterPartition per fetch (every replica.fetch.wait.max.ms,
per partition) to the controller for as long as the broker is not registered. Kafka's leader does not
propose it.
"""

from __future__ import annotations

import asyncio

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


class _Controller:
    """An IsrUpdater that refuses what names a broker it does not see alive, as the controller does."""

    def __init__(self, live: set[int]) -> None:
        self.live = live
        self.proposals: list[ProposedIsr] = []

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        self.proposals.append(proposal)
        await asyncio.sleep(0)
        if not set(proposal.new_isr) <= self.live:
            raise IsrUpdateFailed(ErrorCode.INELIGIBLE_REPLICA)
        return CommittedIsr(2, proposal.leader_epoch, proposal.new_isr, proposal.partition_epoch + 1)


async def _fetch(broker: HandlerBroker, replica: int, offset: int) -> None:
    asked = FetchPartition(
        partition=0, current_leader_epoch=3, fetch_offset=offset, partition_max_bytes=1 << 20
    )
    response: FetchResponse = await broker.call(follower_fetch_request(replica, [asked], 0, 0), 17)
    assert response.responses[0].partitions[0].error_code == ErrorCode.NONE


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


async def test_a_caught_up_follower_whose_broker_is_not_alive_is_not_proposed_into_the_isr(
    replicated_member: HandlerBroker,
) -> None:
    broker = replicated_member
    led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=[2, 3])
    alive = [b for b in BROKERS if b.node_id != 1]  # broker 1's session expired
    await broker.call(update_metadata(alive, [led], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([led], {TOPIC: TOPIC_ID}), 7)
    assert broker.replicas is not None
    controller = _Controller({2, 3})
    broker.replicas.isr_updater = controller
    await broker.call(produce_request(0), 9)
    await _fetch(broker, 3, 1)

    for _ in range(3):
        await _fetch(broker, 1, 1)  # caught up, but not a live broker
        await _settle()

    assert controller.proposals == []
    state = broker.replicas.leading[(TOPIC, 0)].leader_state
    assert state is not None and state.pending_isr is None and state.isr == (2, 3)

    # registered again: the controller's UpdateMetadata names it alive, and its next fetch joins
    await broker.call(update_metadata(BROKERS, [led], {TOPIC: TOPIC_ID}), 8)
    controller.live.add(1)
    await _fetch(broker, 1, 1)
    await _settle()
    assert [p.new_isr for p in controller.proposals] == [(2, 3, 1)]
    assert broker.replicas.leading[(TOPIC, 0)].isr == [2, 3, 1]
