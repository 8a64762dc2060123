"""The leader's side of replication through the handlers: followers' fetches move the high watermark
(and only replicas may fetch as followers), DivergingEpoch for a follower whose last epoch ends
earlier, and acks=all answered once the ISR has the records, or with the error Kafka gives."""

from __future__ import annotations

import asyncio
from pathlib import Path

from odradek.partition.isr_updates import CommittedIsr, ProposedIsr
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import (
    FetchPartition,
    FetchResponse,
    PartitionData,
)
from odradek.protocol.messages.produce import ProduceResponse
from tests.support.controller_requests import Partition, leader_and_isr, stop_replica, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import (
    BROKERS,
    TOPIC,
    TOPIC_ID,
    follower_fetch_request,
    produce_request,
)

FETCH_VERSION = 17


async def _leading(broker: HandlerBroker, isr: list[int] | None = None) -> HandlerBroker:
    """Broker 2 leads orders-0 at epoch 3, replicas [2, 3, 1], with `isr` (default: all three)."""
    led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3, 1], isr=isr)
    await broker.call(update_metadata(BROKERS, [led], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([led], {TOPIC: TOPIC_ID}), 7)
    return broker


async def _follower_fetch(
    broker: HandlerBroker,
    replica: int,
    offset: int,
    last_fetched_epoch: int = -1,
    max_wait_ms: int = 0,
    leader_epoch: int = 3,
    broker_epoch: int = 1,
) -> PartitionData:
    partition = FetchPartition(
        partition=0,
        current_leader_epoch=leader_epoch,
        fetch_offset=offset,
        last_fetched_epoch=last_fetched_epoch,
        partition_max_bytes=1 << 20,
    )
    request = follower_fetch_request(
        replica, [partition], max_wait_ms, min_bytes=1 if max_wait_ms else 0, broker_epoch=broker_epoch
    )
    response: FetchResponse = await broker.call(request, FETCH_VERSION)
    data: PartitionData = response.responses[0].partitions[0]
    return data


async def _produce(broker: HandlerBroker, acks: int, timeout_ms: int = 5000) -> tuple[int, int]:
    request = produce_request(0)
    request.acks = acks
    request.timeout_ms = timeout_ms
    response: ProduceResponse = await broker.call(request, 9)
    answer = response.responses[0].partition_responses[0]
    return int(answer.error_code), int(answer.base_offset)


async def test_the_high_watermark_waits_for_every_in_sync_follower(replicated_member: HandlerBroker) -> None:
    broker = await _leading(replicated_member)
    await _produce(broker, acks=1)
    assert broker.log(TOPIC).high_watermark == 0
    first = await _follower_fetch(broker, 3, 1)
    assert (first.error_code, first.high_watermark) == (ErrorCode.NONE, 0)  # broker 1 has nothing yet
    second = await _follower_fetch(broker, 1, 1)
    assert second.high_watermark == 1
    assert broker.log(TOPIC).high_watermark == 1


async def test_a_follower_fetch_waiting_at_the_log_end_moves_the_high_watermark_when_it_arrives(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 1)
    waiting = asyncio.ensure_future(_follower_fetch(broker, 1, 1, max_wait_ms=5000))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # nothing new to send: the fetch waits
    assert broker.log(TOPIC).high_watermark == 1  # but its position counted at once
    await _produce(broker, acks=1)
    assert (await asyncio.wait_for(waiting, 5)).records


async def test_the_high_watermark_never_moves_backwards(replicated_member: HandlerBroker) -> None:
    broker = await _leading(replicated_member)
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 1)
    await _follower_fetch(broker, 1, 1)
    await _follower_fetch(broker, 1, 0)  # a follower that truncated and fetches again
    assert broker.log(TOPIC).high_watermark == 1


async def test_a_broker_that_is_not_a_replica_cannot_fetch_as_a_follower(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    data = await _follower_fetch(broker, 5, 0)
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_follower_whose_last_epoch_ends_earlier_gets_the_diverging_epoch(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    for _ in range(3):
        await _produce(broker, acks=1)
    # The follower believes epoch 2 went on to offset 5; here epoch 3 began at 0.
    data = await _follower_fetch(broker, 3, 5, last_fetched_epoch=2)
    assert data.error_code == ErrorCode.NONE
    assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (2, 0)
    assert not data.records
    agreeing = await _follower_fetch(broker, 3, 3, last_fetched_epoch=3)
    assert agreeing.diverging_epoch.epoch == -1 and agreeing.diverging_epoch.end_offset == -1


async def test_a_follower_whose_last_fetched_epoch_the_leader_cannot_place_is_out_of_range_and_not_counted(
    replicated_member: HandlerBroker,
) -> None:
    # Kafka's Partition.readRecords: an epoch newer than any here has no end offset (UNDEFINED):
    # OFFSET_OUT_OF_RANGE (the follower asks where the leader's log ends and truncates), not a
    # DivergingEpoch of (-1, -1), which on the wire means "none": such a fetch must not move the
    # high watermark or the ISR
    broker = await _leading(replicated_member)
    replicas = broker.replicas
    assert replicas is not None
    controller = _Controller()
    replicas.isr_updater = controller
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 1, last_fetched_epoch=3)
    data = await _follower_fetch(broker, 1, 1, last_fetched_epoch=5)
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert broker.log(TOPIC).high_watermark == 0  # broker 1 is in the ISR and was not counted


async def test_a_follower_below_the_leaders_log_start_is_out_of_range_even_when_its_epoch_diverges(
    replicated_member: HandlerBroker,
) -> None:
    # Kafka's Partition.readRecords: a fetch below the log start is OFFSET_OUT_OF_RANGE before any
    # DivergingEpoch (the follower then starts over at the leader's log start)
    broker = await _leading(replicated_member)
    for _ in range(3):
        await _produce(broker, acks=1)
    again = Partition(TOPIC, 0, leader=2, leader_epoch=5, replicas=[2, 3, 1], partition_epoch=1)
    await broker.call(leader_and_isr([again], {TOPIC: TOPIC_ID}), 7)
    await _follower_fetch(broker, 3, 3, leader_epoch=5)
    await _follower_fetch(broker, 1, 3, leader_epoch=5)
    broker.log(TOPIC).delete_records(2)
    # epoch 4 never existed here: epoch 3 (ending at 3) diverges from it, but offset 1 is gone
    data = await _follower_fetch(broker, 3, 1, last_fetched_epoch=4, leader_epoch=5)
    assert data.error_code == ErrorCode.OFFSET_OUT_OF_RANGE


async def test_acks_all_is_answered_once_the_in_sync_followers_have_the_records(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1))
    await asyncio.sleep(0.2)
    assert not produced.done()
    await _follower_fetch(broker, 3, 1)
    await asyncio.sleep(0.05)
    assert not produced.done()  # broker 1 is in the ISR too
    await _follower_fetch(broker, 1, 1)
    assert await asyncio.wait_for(produced, 5) == (ErrorCode.NONE, 0)


async def test_acks_all_times_out_with_request_timed_out(replicated_member: HandlerBroker) -> None:
    broker = await _leading(replicated_member)
    assert await _produce(broker, acks=-1, timeout_ms=200) == (ErrorCode.REQUEST_TIMED_OUT, -1)
    assert broker.log(TOPIC).log_end_offset == 1  # appended all the same, as Kafka


async def test_acks_all_waiting_when_the_leadership_moves_is_not_leader(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1))
    await asyncio.sleep(0.1)
    moved = Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=[2, 3, 1])
    await broker.call(leader_and_isr([moved], {TOPIC: TOPIC_ID}), 7)
    assert await asyncio.wait_for(produced, 5) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)


async def test_acks_all_waiting_when_the_leadership_moves_is_answered_at_once_not_at_its_timeout(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1, timeout_ms=30_000))
    await asyncio.sleep(0.1)
    moved = Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=[2, 3, 1])
    await broker.call(leader_and_isr([moved], {TOPIC: TOPIC_ID}), 7)
    # well before the 30 s timeout: a client retries on the new leader instead of waiting it out
    assert await asyncio.wait_for(produced, 3) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)


async def test_acks_all_waiting_on_a_dead_follower_is_acknowledged_once_the_controller_drops_it_from_the_isr(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1, timeout_ms=30_000))
    await asyncio.sleep(0.1)
    await _follower_fetch(broker, 3, 1)  # broker 3 has the record; broker 1 is dead and never fetches
    assert not produced.done()
    # the controller after broker 1's failure: UpdateMetadata without it, then LeaderAndIsr with the
    # same leader, a new epoch and an ISR without broker 1
    shrunk = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=[2, 3])
    live = [b for b in BROKERS if b.node_id != 1]
    await broker.call(update_metadata(live, [shrunk], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([shrunk], {TOPIC: TOPIC_ID}), 7)
    # answered at once, not after 30 s, and acknowledged: the new ISR holds the record (the HW passed
    # it) and this broker stayed the leader, so its log kept the batch (Kafka's makeLeader)
    assert await asyncio.wait_for(produced, 3) == (ErrorCode.NONE, 0)
    assert broker.log(TOPIC).high_watermark == 1


async def test_a_follower_fetch_parked_at_an_earlier_epoch_is_answered_fenced_at_the_new_epoch(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 1)
    await _follower_fetch(broker, 1, 1)
    parked = asyncio.ensure_future(_follower_fetch(broker, 3, 1, max_wait_ms=10_000))
    await asyncio.sleep(0.1)
    assert not parked.done()  # nothing new: it waits for data
    # the controller bumps the epoch (an ISR change elsewhere, same leader): the parked fetch cannot
    # be answered at epoch 4, and the follower should not wait out its max_wait_ms to find out
    again = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], partition_epoch=1)
    await broker.call(leader_and_isr([again], {TOPIC: TOPIC_ID}), 7)
    answer = await asyncio.wait_for(parked, 2)
    assert answer.error_code == ErrorCode.FENCED_LEADER_EPOCH


async def test_acks_all_waiting_on_a_follower_in_controlled_shutdown_is_decided_when_it_leaves_the_isr(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1, timeout_ms=30_000))
    await asyncio.sleep(0.1)
    await _follower_fetch(broker, 3, 1)  # broker 3 has the record; broker 1 stopped fetching
    assert not produced.done()
    # A controlled shutdown of broker 1: still alive (registered) while it shuts down, but the
    # controller takes it out of the ISR at a new leader epoch. As Kafka's resetReplicaState, a
    # follower outside the new ISR no longer counts as caught up, so it does not hold the HW.
    shrunk = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], isr=[2, 3])
    await broker.call(update_metadata(BROKERS, [shrunk], {TOPIC: TOPIC_ID}), 8)
    await broker.call(leader_and_isr([shrunk], {TOPIC: TOPIC_ID}), 7)
    assert broker.log(TOPIC).high_watermark == 1
    # decided at once (how a produce of the earlier epoch is answered is the purgatory's rule)
    code, _ = await asyncio.wait_for(produced, 3)
    assert code != ErrorCode.REQUEST_TIMED_OUT


async def test_acks_all_waiting_across_a_new_epoch_that_keeps_this_leader_is_acknowledged_not_refused(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1, timeout_ms=30_000))
    await asyncio.sleep(0.1)
    # a preferred election back here, a reassignment step: the same leader at a new epoch
    again = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], partition_epoch=1)
    await broker.call(leader_and_isr([again], {TOPIC: TOPIC_ID}), 7)
    await asyncio.sleep(0.1)
    assert not produced.done()  # still waiting for the ISR, not NOT_LEADER_OR_FOLLOWER
    await _follower_fetch(broker, 3, 1, leader_epoch=4)
    await _follower_fetch(broker, 1, 1, leader_epoch=4)
    assert await asyncio.wait_for(produced, 5) == (ErrorCode.NONE, 0)
    assert broker.log(TOPIC).log_end_offset == 1  # nothing for a retry to write twice


async def test_acks_all_waiting_while_this_broker_was_a_follower_and_leads_again_is_not_leader(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    replicas = broker.services.replicas
    assert replicas is not None
    await _produce(broker, acks=-1, timeout_ms=50)  # appended at epoch 3, not acknowledged
    follower = Partition(TOPIC, 0, leader=1, leader_epoch=4, replicas=[2, 3, 1])
    await broker.call(leader_and_isr([follower], {TOPIC: TOPIC_ID}), 7)
    leader_again = Partition(TOPIC, 0, leader=2, leader_epoch=5, replicas=[2, 3, 1])
    await broker.call(leader_and_isr([leader_again], {TOPIC: TOPIC_ID}), 7)
    # an append of epoch 3 is no longer this leader's to acknowledge (as a follower its log could
    # have been truncated); one of epoch 5 is
    assert not replicas.still_leading_since(TOPIC, 0, 3)
    assert replicas.still_leading_since(TOPIC, 0, 5)
    assert replicas.leading[(TOPIC, 0)].leader_since_epoch == 5


async def test_acks_all_waiting_when_the_replica_is_stopped_is_answered_at_once(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    produced = asyncio.ensure_future(_produce(broker, acks=-1, timeout_ms=30_000))
    await asyncio.sleep(0.1)
    await broker.call(stop_replica([(TOPIC, 0)], delete=False, leader_epoch=4), 4)
    assert await asyncio.wait_for(produced, 3) == (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)


async def test_acks_all_with_the_isr_below_min_insync_appends_nothing(tmp_path: Path) -> None:
    broker = HandlerBroker(
        tmp_path / "member", node_id=2, zookeeper_mode=True, replicated=True, **{"min.insync.replicas": "2"}
    )
    try:
        await _leading(broker, isr=[2])
        assert await _produce(broker, acks=-1) == (ErrorCode.NOT_ENOUGH_REPLICAS, -1)
        assert broker.log(TOPIC).log_end_offset == 0
        assert await _produce(broker, acks=1) == (ErrorCode.NONE, 0)
    finally:
        broker.close()


async def test_acks_all_on_fewer_replicas_than_min_insync_needs_only_all_of_them(tmp_path: Path) -> None:
    broker = HandlerBroker(
        tmp_path / "member", node_id=2, zookeeper_mode=True, replicated=True, **{"min.insync.replicas": "3"}
    )
    try:
        led = Partition(TOPIC, 0, leader=2, leader_epoch=3, replicas=[2, 3], isr=[2, 3])
        await broker.call(update_metadata(BROKERS, [led], {TOPIC: TOPIC_ID}), 8)
        await broker.call(leader_and_isr([led], {TOPIC: TOPIC_ID}), 7)
        produced = asyncio.ensure_future(_produce(broker, acks=-1))  # Kafka's min(3, RF 2) = 2: both
        await asyncio.sleep(0.05)
        await _follower_fetch(broker, 3, 1)
        assert await asyncio.wait_for(produced, 5) == (ErrorCode.NONE, 0)
    finally:
        broker.close()


class _Controller:
    """An IsrUpdater that commits every proposal at the next partition epoch."""

    def __init__(self) -> None:
        self.proposals: list[ProposedIsr] = []

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        self.proposals.append(proposal)
        return CommittedIsr(2, proposal.leader_epoch, proposal.new_isr, proposal.partition_epoch + 1)


async def test_acks_all_whose_isr_shrank_below_min_insync_as_the_hw_passed_is_not_enough_after_append(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(
        tmp_path / "member", node_id=2, zookeeper_mode=True, replicated=True, **{"min.insync.replicas": "2"}
    )
    try:
        await _leading(broker)
        replicas = broker.replicas
        assert replicas is not None
        produced = asyncio.ensure_future(_produce(broker, acks=-1))
        await asyncio.sleep(0.05)
        await _follower_fetch(broker, 3, 1)
        await _follower_fetch(broker, 1, 1)  # the HW passes the batch: the waiting produce is woken...
        hosted = replicas.leading[(TOPIC, 0)]
        # ...and before it runs, the commit of an ISR shrink to the leader alone arrives (AlterPartition)
        replicas.leaders._apply_committed_isr(hosted, CommittedIsr(2, 3, (2,), 1))
        assert await asyncio.wait_for(produced, 5) == (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, -1)
    finally:
        broker.close()


async def test_the_high_watermark_stays_while_the_isr_is_under_min_insync(tmp_path: Path) -> None:
    broker = HandlerBroker(
        tmp_path / "member", node_id=2, zookeeper_mode=True, replicated=True, **{"min.insync.replicas": "2"}
    )
    try:
        await _leading(broker, isr=[2])
        replicas = broker.replicas
        assert replicas is not None
        replicas.isr_updater = _Controller()
        assert await _produce(broker, acks=1) == (ErrorCode.NONE, 0)
        assert broker.log(TOPIC).high_watermark == 0  # only the leader has it: not visible (Kafka 3.7+)
        await _follower_fetch(broker, 3, 1)  # caught up: proposed into the ISR, committed
        await asyncio.sleep(0.05)
        assert replicas.leading[(TOPIC, 0)].isr == [2, 3]
        assert broker.log(TOPIC).high_watermark == 1
    finally:
        broker.close()


class _SlowController:
    """An IsrUpdater whose answers the test releases."""

    def __init__(self) -> None:
        self.proposals: list[ProposedIsr] = []
        self.answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def submit(self, proposal: ProposedIsr) -> CommittedIsr:
        self.proposals.append(proposal)
        await self.answer
        return CommittedIsr(2, proposal.leader_epoch, proposal.new_isr, proposal.partition_epoch + 1)


async def test_a_caught_up_follower_is_proposed_back_and_holds_the_high_watermark_meanwhile(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member, isr=[2, 3])
    replicas = broker.replicas
    assert replicas is not None
    controller = _SlowController()
    replicas.isr_updater = controller
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 1)
    assert broker.log(TOPIC).high_watermark == 1
    await _follower_fetch(broker, 1, 0)
    assert controller.proposals == []  # below the high watermark: not in sync yet
    await _follower_fetch(broker, 1, 1)
    await asyncio.sleep(0.01)  # the proposal goes out in a task of its own
    assert [p.new_isr for p in controller.proposals] == [(2, 3, 1)]
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 2)
    assert broker.log(TOPIC).high_watermark == 1  # the pending expansion counts: broker 1 is at 1
    await _follower_fetch(broker, 1, 1)
    await asyncio.sleep(0.01)
    assert len(controller.proposals) == 1  # one change in flight per partition
    controller.answer.set_result(None)
    await asyncio.sleep(0.05)
    assert replicas.leading[(TOPIC, 0)].isr == [2, 3, 1]
    await _follower_fetch(broker, 1, 2)
    assert broker.log(TOPIC).high_watermark == 2


async def test_an_isr_proposal_carries_the_broker_epoch_each_follower_last_fetched_as(
    replicated_member: HandlerBroker,
) -> None:
    # KIP-903: the controller refuses a member whose registration is newer than the epoch the leader
    # saw it fetch with (it restarted since, maybe without its unflushed tail)
    broker = await _leading(replicated_member, isr=[2, 3])
    replicas = broker.replicas
    assert replicas is not None
    controller = _Controller()
    replicas.isr_updater = controller
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 3, 1, broker_epoch=17)
    await _follower_fetch(broker, 1, 0, broker_epoch=40)
    await _follower_fetch(broker, 1, 1, broker_epoch=41)
    await asyncio.sleep(0.01)
    [proposal] = controller.proposals
    assert proposal.new_isr == (2, 3, 1)
    assert dict(proposal.member_epochs) == {3: 17, 1: 41}


async def test_a_leader_keeps_its_followers_positions_across_its_own_new_epoch(
    replicated_member: HandlerBroker,
) -> None:
    broker = await _leading(replicated_member)
    await _produce(broker, acks=1)
    await _produce(broker, acks=1)
    await _follower_fetch(broker, 1, 2)
    await _follower_fetch(broker, 3, 1)
    assert broker.log(TOPIC).high_watermark == 1
    again = Partition(TOPIC, 0, leader=2, leader_epoch=4, replicas=[2, 3, 1], partition_epoch=1)
    await broker.call(leader_and_isr([again], {TOPIC: TOPIC_ID}), 7)
    answer = await _follower_fetch(broker, 3, 2, leader_epoch=4)  # broker 1 said 2 in epoch 3: it counts
    assert answer.error_code == ErrorCode.NONE
    assert broker.log(TOPIC).high_watermark == 2


async def test_an_idempotent_retry_of_a_timed_out_acks_all_batch_waits_for_the_isr_too(
    replicated_member: HandlerBroker,
) -> None:
    from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from odradek.protocol.records import RecordBatchBuilder

    broker = await _leading(replicated_member)

    async def produce_idempotent(timeout_ms: int) -> tuple[int, int]:
        builder = RecordBatchBuilder(0, producer_id=4000, producer_epoch=0, base_sequence=0)
        builder.append(1_700_000_000_000, None, b"once")
        request = ProduceRequest(
            acks=-1,
            timeout_ms=timeout_ms,
            topic_data=[
                TopicProduceData(
                    name=TOPIC, partition_data=[PartitionProduceData(index=0, records=builder.build())]
                )
            ],
        )
        response: ProduceResponse = await broker.call(request, 9)
        answer = response.responses[0].partition_responses[0]
        return int(answer.error_code), int(answer.base_offset)

    assert await produce_idempotent(100) == (ErrorCode.REQUEST_TIMED_OUT, -1)
    retried = asyncio.ensure_future(produce_idempotent(5000))
    await asyncio.sleep(0.2)
    assert not retried.done()  # a duplicate, but not yet on the followers: no acknowledgement
    await _follower_fetch(broker, 3, 1)
    await _follower_fetch(broker, 1, 1)
    assert await asyncio.wait_for(retried, 5) == (ErrorCode.NONE, 0)
    assert broker.log(TOPIC).log_end_offset == 1  # appended once


async def test_an_incremental_fetch_session_answers_the_diverging_epoch(
    replicated_member: HandlerBroker,
) -> None:
    """In a session the leader answers only partitions with news: a divergence is news even when the
    high watermark has not moved (Kafka's CachedPartition.maybeUpdateResponseData)."""
    broker = await _leading(replicated_member)
    for _ in range(3):
        await _produce(broker, acks=1)

    async def fetch(offset: int, last_fetched_epoch: int, session_id: int, epoch: int) -> FetchResponse:
        partition = FetchPartition(
            partition=0,
            current_leader_epoch=3,
            fetch_offset=offset,
            last_fetched_epoch=last_fetched_epoch,
            partition_max_bytes=1 << 20,
        )
        request = follower_fetch_request(3, [partition], 0, min_bytes=0)
        request.session_id, request.session_epoch = session_id, epoch
        response: FetchResponse = await broker.call(request, FETCH_VERSION)
        return response

    opened = await fetch(3, 3, 0, 0)
    assert opened.session_id > 0 and opened.responses[0].partitions[0].high_watermark == 0
    quiet = await fetch(3, 3, opened.session_id, 1)
    assert quiet.responses == []  # nothing new
    # the follower's log now says epoch 2 went on to offset 5 (as after an unclean election)
    diverged = await fetch(5, 2, opened.session_id, 2)
    (data,) = diverged.responses[0].partitions
    assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (2, 0)
