"""When a follower outside the ISR may join it (Kafka's Partition.isFollowerInSync): its log end must
reach the high watermark and the leader's log end at the moment it applied its current LeaderAndIsr
(Kafka's leaderEpochStartOffsetOpt), so that it holds everything this leader may have acknowledged.

That offset is not the start of the epoch in the leader's epoch cache when a leader restarts and
applies the same epoch again (every ISR member restarted unseen: the controller keeps the state), the
case here: the epoch began at 0, but the restarted leader's log already held 5 records at that epoch,
some maybe acknowledged, above a high watermark checkpointed lower.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.partition.isr_updates import CommittedIsr, ProposedIsr
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

#: Broker 2 leads at epoch 3 with broker 1 in the ISR; broker 3 is out of it.
LED = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 1, 3], isr=[2, 1])


class _Controller:
    """An IsrUpdater that records proposals and never answers."""

    def __init__(self) -> None:
        self.proposals: list[ProposedIsr] = []

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        self.proposals.append(proposal)
        await asyncio.Event().wait()
        raise AssertionError("never answered")


async def _lead(broker: HandlerBroker) -> None:
    await broker.call(update_metadata(BROKERS, [LED], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([LED], {TOPIC: TOPIC_ID}), 7)


async def _fetch(broker: HandlerBroker, replica: int, offset: int) -> None:
    asked = FetchPartition(
        partition=0,
        current_leader_epoch=3,
        fetch_offset=offset,
        last_fetched_epoch=3,
        partition_max_bytes=1 << 20,
    )
    response: FetchResponse = await broker.call(follower_fetch_request(replica, [asked], 0, 0), 17)
    assert response.responses[0].partitions[0].error_code == ErrorCode.NONE


async def test_a_follower_below_where_a_restarted_leader_applied_its_epoch_is_not_proposed_into_the_isr(
    tmp_path: Path,
) -> None:
    log_dir = tmp_path / "member"
    before = HandlerBroker(log_dir, node_id=2, zookeeper_mode=True, replicated=True)
    try:
        await _lead(before)
        for _ in range(5):
            await before.call(produce_request(0), 9)
        await _fetch(before, 1, 2)  # broker 1 has 0-1: the high watermark is 2
        assert before.log(TOPIC).high_watermark == 2 and before.log(TOPIC).log_end_offset == 5
    finally:
        before.close()

    # The leader restarts on the same log; the controller kept the state and sends the same epoch.
    broker = HandlerBroker(log_dir, node_id=2, zookeeper_mode=True, replicated=True)
    try:
        await _lead(broker)
        replicas = broker.replicas
        assert replicas is not None
        controller = _Controller()
        replicas.isr_updater = controller
        log = broker.log(TOPIC)
        assert log.leader_epoch_cache.entries[-1].start_offset == 0  # epoch 3 began at 0 ...
        assert replicas.leader_epoch_start_offset(TOPIC, 0) == 5  # ... this leadership at 5
        assert log.high_watermark <= 2

        state = replicas.leading[(TOPIC, 0)].leader_state
        assert state is not None
        await _fetch(broker, 3, 2)  # broker 3 holds 0-1: at the high watermark, below 5
        assert state.pending_isr is None, "broker 3 proposed into the ISR below acknowledged records"
        await _fetch(broker, 3, 5)  # caught up with everything this leader held when it began
        assert state.pending_isr == (2, 1, 3)
        await asyncio.sleep(0)  # the proposal goes out in a task of its own
        assert [p.new_isr for p in controller.proposals] == [(2, 1, 3)]
    finally:
        broker.close()
