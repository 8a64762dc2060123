"""ShareFetch and ShareAcknowledge through their handlers: share sessions and their epochs, records
acquired by one member at a time, acknowledgements piggybacked or alone, releases when a session
closes, the long poll, and per-partition errors."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from odradek.handlers._common.registry import registration_for
from odradek.partition.share.manager import EARLIEST, SharePartitionManager
from odradek.partition.share.persister import SharePartitionKey, StateBatch
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import share_acknowledge as sa
from odradek.protocol.messages import share_fetch as sf
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.records import Record, build_record_batch, iter_record_batches
from tests.support.controller_requests import leader_and_isr, update_metadata
from tests.support.handler_services import HandlerBroker
from tests.support.share_persister import InMemorySharePersister
from tests.unit.handlers.cluster_member import BROKERS, TOPIC, TOPIC_ID, led_by_1, led_here

ACCEPT, RELEASE, REJECT = 1, 2, 3


@asynccontextmanager
async def share_broker(tmp_path: Path, **overrides: str) -> AsyncIterator[tuple[HandlerBroker, uuid.UUID]]:
    broker = HandlerBroker(tmp_path / "data", **overrides)
    persister = InMemorySharePersister()
    # the group's share.auto.offset.reset (a GROUP config) is earliest
    manager = SharePartitionManager.for_broker(
        broker.config, persister, lambda _: {"share.auto.offset.reset": EARLIEST}
    )
    broker.services.share_partitions = manager
    topic = await broker.create_topic("t")
    await persister.initialize(SharePartitionKey("sg", topic.topic_id, 0), 0, -1)
    try:
        yield broker, topic.topic_id
    finally:
        manager.close()
        broker.close()


def produce(broker: HandlerBroker, count: int) -> None:
    records = [Record(offset=i, timestamp=1, key=None, value=b"r%d" % i) for i in range(count)]
    broker.log("t").append(bytearray(build_record_batch(records)))


def fetch(
    topic_id: uuid.UUID,
    member: str,
    epoch: int,
    acks: list[sf.AcknowledgementBatch] | None = None,
    *,
    max_wait_ms: int = 0,
    partition: int = 0,
    max_records: int = 500,
    min_bytes: int = 1,
    share_acquire_mode: int = 0,
    is_renew_ack: bool = False,
) -> sf.ShareFetchRequest:
    return sf.ShareFetchRequest(
        group_id="sg",
        member_id=member,
        share_session_epoch=epoch,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_records=max_records,
        batch_size=500,
        share_acquire_mode=share_acquire_mode,
        is_renew_ack=is_renew_ack,
        topics=[
            sf.FetchTopic(
                topic_id=topic_id,
                partitions=[sf.FetchPartition(partition_index=partition, acknowledgement_batches=acks or [])],
            )
        ],
    )


def acquired(response: sf.ShareFetchResponse) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for topic in response.responses
        for p in topic.partitions
        for a in p.acquired_records
    ]


def only_partition(response: sf.ShareFetchResponse) -> sf.PartitionData:
    [topic] = response.responses
    [partition] = topic.partitions
    return partition


def batch(first: int, last: int, kind: int) -> sf.AcknowledgementBatch:
    return sf.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=[kind])


def test_share_fetch_and_acknowledge_are_served_at_versions_1_and_2() -> None:
    for api_key in (ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE):
        assert registration_for(api_key, 0) is None
        assert registration_for(api_key, 1) is not None
        assert registration_for(api_key, 2) is not None
        assert registration_for(api_key, 3) is None


async def test_records_go_to_one_member_at_a_time_and_accepted_ones_never_again(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 3)
        a = await broker.call_over_wire(fetch(t, "a", 0), 1)
        assert a.error_code == ErrorCode.NONE and a.acquisition_lock_timeout_ms == 30_000
        assert acquired(a) == [(0, 2, 1)]
        [received] = list(iter_record_batches(only_partition(a).records))
        assert [r.value for r in received.records] == [b"r0", b"r1", b"r2"]
        b = await broker.call_over_wire(fetch(t, "b", 0), 1)
        assert acquired(b) == []
        a = await broker.call_over_wire(fetch(t, "a", 1, [batch(0, 0, ACCEPT), batch(1, 2, RELEASE)]), 1)
        assert only_partition(a).acknowledge_error_code == ErrorCode.NONE
        assert acquired(a) == [(1, 2, 2)]  # released, then acquired again by the same fetch
        answer = await broker.call_over_wire(
            sa.ShareAcknowledgeRequest(
                group_id="sg",
                member_id="a",
                share_session_epoch=2,
                topics=[
                    sa.AcknowledgeTopic(
                        topic_id=t,
                        partitions=[
                            sa.AcknowledgePartition(
                                partition_index=0,
                                acknowledgement_batches=[
                                    sa.AcknowledgementBatch(
                                        first_offset=1, last_offset=2, acknowledge_types=[REJECT]
                                    )
                                ],
                            )
                        ],
                    )
                ],
            ),
            1,
        )
        assert [p.error_code for topic in answer.responses for p in topic.partitions] == [ErrorCode.NONE]
        assert acquired(await broker.call_over_wire(fetch(t, "b", 1), 1)) == []


async def test_closing_a_share_session_releases_what_its_member_holds(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        await broker.call(fetch(t, "a", 0), 1)
        closing = await broker.call(fetch(t, "a", -1), 1)
        assert closing.error_code == ErrorCode.NONE and acquired(closing) == []
        assert acquired(await broker.call(fetch(t, "b", 0), 1)) == [(0, 1, 2)]
        gone = await broker.call(fetch(t, "a", 1), 1)
        assert gone.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


async def test_share_session_epochs_are_checked(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 1)
        first = await broker.call(fetch(t, "a", 0, [batch(0, 0, ACCEPT)]), 1)
        assert first.error_code == ErrorCode.INVALID_REQUEST  # acknowledgements before the session
        await broker.call(fetch(t, "a", 0), 1)
        assert (await broker.call(fetch(t, "a", 5), 1)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert (await broker.call(fetch(t, "a", 1), 1)).error_code == ErrorCode.NONE
        alone = sa.ShareAcknowledgeRequest(group_id="sg", member_id="a", share_session_epoch=0, topics=[])
        assert (await broker.call(alone, 1)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        no_member = fetch(t, "", 0)
        assert (await broker.call(no_member, 1)).error_code == ErrorCode.INVALID_REQUEST


async def test_acknowledging_records_not_held_is_an_invalid_record_state(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        await broker.call(fetch(t, "a", 0), 1)
        await broker.call(fetch(t, "b", 0), 1)
        stolen = await broker.call(fetch(t, "b", 1, [batch(0, 1, ACCEPT)]), 1)
        assert only_partition(stolen).acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE


async def test_a_share_fetch_waits_for_records_to_arrive(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        await broker.call(fetch(t, "a", 0), 1)
        waiting = asyncio.ensure_future(broker.call(fetch(t, "a", 1, max_wait_ms=30_000), 1))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        produce(broker, 1)
        broker.services.appends.notify(broker.log("t").topic_partition)
        assert acquired(await asyncio.wait_for(waiting, 30)) == [(0, 0, 1)]


async def test_an_unknown_topic_id_is_answered_per_partition(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, _):
        answer = await broker.call(fetch(uuid.uuid4(), "a", 0), 1)
        assert only_partition(answer).error_code == ErrorCode.UNKNOWN_TOPIC_ID


async def test_share_fetch_is_unsupported_without_share_partitions(tmp_path: Path) -> None:
    broker = HandlerBroker(tmp_path / "data")
    try:
        answer = await broker.call(fetch(uuid.uuid4(), "a", 0), 1)
        assert answer.error_code == ErrorCode.UNSUPPORTED_VERSION
    finally:
        broker.close()


async def test_the_broker_settings_set_the_lock_duration_and_delivery_limit(tmp_path: Path) -> None:
    settings = {"group.share.record.lock.duration.ms": "45000", "group.share.delivery.count.limit": "2"}
    async with share_broker(tmp_path, **settings) as (broker, t):
        produce(broker, 1)
        first = await broker.call(fetch(t, "a", 0), 1)
        assert first.acquisition_lock_timeout_ms == 45000
        again = await broker.call(fetch(t, "a", 1, [batch(0, 0, RELEASE)]), 1)
        assert acquired(again) == [(0, 0, 2)]
        last = await broker.call(fetch(t, "a", 2, [batch(0, 0, RELEASE)]), 1)
        assert acquired(last) == []  # delivered twice: archived


async def test_a_partition_led_elsewhere_is_answered_not_leader_with_the_leader_and_its_epoch(
    cluster_member: HandlerBroker,
) -> None:
    picture = [led_here(0, epoch=3), led_by_1(1, epoch=7)]
    await cluster_member.call(update_metadata(BROKERS, picture, {TOPIC: TOPIC_ID}), 8)
    await cluster_member.call(leader_and_isr(picture, {TOPIC: TOPIC_ID}), 7)
    persister = InMemorySharePersister()
    manager = SharePartitionManager.for_broker(cluster_member.config, persister)
    cluster_member.services.share_partitions = manager
    try:
        answer = await cluster_member.call_over_wire(fetch(TOPIC_ID, "a", 0, partition=1), 1)
        partition = only_partition(answer)
        assert partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (partition.current_leader.leader_id, partition.current_leader.leader_epoch) == (1, 7)
        await persister.initialize(SharePartitionKey("sg", TOPIC_ID, 0), 0, -1)
        led = await cluster_member.call_over_wire(fetch(TOPIC_ID, "b", 0, partition=0), 1)
        assert only_partition(led).error_code == ErrorCode.NONE
        assert persister.states[SharePartitionKey("sg", TOPIC_ID, 0)].leader_epoch == 3  # read at its epoch
    finally:
        manager.close()


async def test_acknowledgements_write_how_many_records_past_the_start_offset_are_delivered(
    tmp_path: Path,
) -> None:
    # KIP-1226's DeliveryCompleteCount, which DescribeShareGroupOffsets v1's lag subtracts: it was
    # never written (-1), so no lag could be told
    async with share_broker(tmp_path) as (broker, t):
        manager = broker.services.share_partitions
        assert manager is not None
        persister = manager.persister
        assert isinstance(persister, InMemorySharePersister)
        produce(broker, 5)
        await broker.call(fetch(t, "a", 0), 1)
        acks = [batch(0, 0, RELEASE), batch(1, 3, ACCEPT), batch(4, 4, REJECT)]
        again = await broker.call(fetch(t, "a", 1, acks), 1)
        assert acquired(again) == [(0, 0, 2)]  # released, then acquired again by the same fetch
        stored = persister.states[SharePartitionKey("sg", t, 0)]
        assert (stored.start_offset, stored.delivery_complete_count) == (0, 4)
        await broker.call(fetch(t, "a", 2, [batch(0, 0, ACCEPT)]), 1)
        assert (stored.start_offset, stored.delivery_complete_count) == (5, 0)


# ----- v2: acquire modes (KIP-1206) and renewed locks (KIP-1222), as Kafka 4.4 answers them --------

RENEW = 4


def acknowledge(
    topic_id: uuid.UUID,
    member: str,
    epoch: int,
    batches: list[sa.AcknowledgementBatch],
    *,
    renew: bool = False,
) -> sa.ShareAcknowledgeRequest:
    return sa.ShareAcknowledgeRequest(
        group_id="sg",
        member_id=member,
        share_session_epoch=epoch,
        is_renew_ack=renew,
        topics=[
            sa.AcknowledgeTopic(
                topic_id=topic_id,
                partitions=[sa.AcknowledgePartition(partition_index=0, acknowledgement_batches=batches)],
            )
        ],
    )


def alone(first: int, last: int, *kinds: int) -> sa.AcknowledgementBatch:
    return sa.AcknowledgementBatch(first_offset=first, last_offset=last, acknowledge_types=list(kinds))


def acknowledge_errors(response: sa.ShareAcknowledgeResponse) -> list[int]:
    return [p.error_code for topic in response.responses for p in topic.partitions]


async def test_record_limit_mode_acquires_no_more_than_max_records_even_inside_a_batch(
    tmp_path: Path,
) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 5)  # one batch
        strict = await broker.call_over_wire(fetch(t, "a", 0, share_acquire_mode=1, max_records=2), 2)
        assert acquired(strict) == [(0, 1, 1)]
        whole = await broker.call_over_wire(fetch(t, "a", 1, share_acquire_mode=0, max_records=2), 2)
        assert acquired(whole) == [(2, 4, 1)]  # batch-optimized: the rest of the batch


async def test_an_unknown_acquire_mode_is_an_invalid_request(tmp_path: Path) -> None:
    # Kafka 4.4 answers UNKNOWN_SERVER_ERROR (its enum lookup throws): a client's bad byte is its error
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 1)
        answer = await broker.call(fetch(t, "a", 0, share_acquire_mode=7), 2)
        assert answer.error_code == ErrorCode.INVALID_REQUEST
        assert acquired(answer) == []


async def test_a_renewed_lock_outlives_the_lock_it_was_acquired_under(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        assert acquired(await broker.call(fetch(t, "a", 0), 2)) == [(0, 1, 1)]
        renewed = await broker.call(acknowledge(t, "a", 1, [alone(0, 0, RENEW)], renew=True), 2)
        assert acknowledge_errors(renewed) == [ErrorCode.NONE]
        assert renewed.acquisition_lock_timeout_ms == 30_000
        manager = broker.services.share_partitions
        assert manager is not None
        share = manager.existing(SharePartitionKey("sg", t, 0))
        assert share is not None
        share._lock_timed_out(1)  # the first acquisition's lock times out: only record 1 is released
        await asyncio.gather(*share._releases)
        assert acquired(await broker.call(fetch(t, "b", 0), 2)) == [(1, 1, 2)]
        done = await broker.call(acknowledge(t, "a", 2, [alone(0, 0, ACCEPT)]), 2)
        assert acknowledge_errors(done) == [ErrorCode.NONE]  # still a's to acknowledge


async def test_renewing_a_record_not_held_is_an_invalid_record_state(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        await broker.call(fetch(t, "a", 0), 2)
        await broker.call(fetch(t, "b", 0), 2)
        stolen = await broker.call(acknowledge(t, "b", 1, [alone(0, 0, RENEW)], renew=True), 2)
        assert acknowledge_errors(stolen) == [ErrorCode.INVALID_RECORD_STATE]


async def test_a_renew_type_needs_version_2_and_is_renew_ack(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 3)
        await broker.call(fetch(t, "a", 0), 2)
        v1 = await broker.call(acknowledge(t, "a", 1, [alone(0, 0, RENEW)]), 1)
        assert acknowledge_errors(v1) == [ErrorCode.INVALID_REQUEST]
        unflagged = await broker.call(acknowledge(t, "a", 2, [alone(0, 0, RENEW)]), 2)
        assert acknowledge_errors(unflagged) == [ErrorCode.INVALID_REQUEST]
        in_fetch = await broker.call(fetch(t, "a", 3, [batch(1, 1, RENEW)]), 2)
        assert only_partition(in_fetch).acknowledge_error_code == ErrorCode.INVALID_REQUEST
        unknown = await broker.call(acknowledge(t, "a", 4, [alone(2, 2, 5)], renew=True), 2)
        assert acknowledge_errors(unknown) == [ErrorCode.INVALID_REQUEST]


async def test_a_renewing_share_fetch_asks_for_no_records_and_gets_none(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        await broker.call(fetch(t, "a", 0, max_records=1, share_acquire_mode=1), 2)
        asking = fetch(t, "a", 1, [batch(0, 0, RENEW)], is_renew_ack=True)
        refused = await broker.call(asking, 2)
        assert (refused.error_code, refused.responses) == (ErrorCode.INVALID_REQUEST, [])
        renewing = fetch(t, "a", 1, [batch(0, 0, RENEW)], is_renew_ack=True, max_records=0, min_bytes=0)
        renewing.max_bytes = 0
        answer = await broker.call(renewing, 2)
        assert answer.error_code == ErrorCode.NONE
        assert only_partition(answer).acknowledge_error_code == ErrorCode.NONE
        assert acquired(answer) == []  # record 1 is available, but a renewal fetches nothing


async def test_acknowledgement_batches_out_of_order_are_invalid(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 5)
        await broker.call(fetch(t, "a", 0), 2)
        backwards = await broker.call(acknowledge(t, "a", 1, [alone(3, 4, ACCEPT), alone(0, 1, ACCEPT)]), 2)
        assert acknowledge_errors(backwards) == [ErrorCode.INVALID_REQUEST]
        # touching at one offset passes the check but acknowledges it twice, as Kafka 4.4 refuses it
        twice = await broker.call(acknowledge(t, "a", 2, [alone(0, 1, ACCEPT), alone(1, 2, ACCEPT)]), 2)
        assert acknowledge_errors(twice) == [ErrorCode.INVALID_RECORD_STATE]


async def test_a_closed_connection_releases_what_its_share_session_held_at_once(
    tmp_path: Path,
) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        assert acquired(await broker.call(fetch(t, "a", 0), 1, client_port=50001)) == [(0, 1, 1)]
        manager = broker.services.share_partitions
        assert manager is not None
        await manager.connection_closed(50001)
        # released at once; the delivery to the dead member stays counted, as Kafka 4.4's release
        assert acquired(await broker.call(fetch(t, "b", 0), 1, client_port=50002)) == [(0, 1, 2)]
        gone = await broker.call(fetch(t, "a", 1), 1, client_port=50001)
        assert gone.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


async def test_a_session_reopened_on_another_connection_outlives_the_first_connection(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        await broker.call(fetch(t, "a", 0), 1, client_port=50001)
        await broker.call(fetch(t, "a", 0), 1, client_port=50002)
        manager = broker.services.share_partitions
        assert manager is not None
        await manager.connection_closed(50001)
        assert acquired(await broker.call(fetch(t, "b", 0), 1, client_port=50003)) == []
        assert (await broker.call(fetch(t, "a", 1), 1, client_port=50002)).error_code == ErrorCode.NONE


async def test_a_member_id_longer_than_36_characters_is_an_invalid_request(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        forged = await broker.call(fetch(t, "m" * 37, 0), 1)
        assert forged.error_code == ErrorCode.INVALID_REQUEST
        alone = sa.ShareAcknowledgeRequest(
            group_id="sg", member_id="m" * 5000, share_session_epoch=1, topics=[]
        )
        assert (await broker.call(alone, 1)).error_code == ErrorCode.INVALID_REQUEST
        manager = broker.services.share_partitions
        assert manager is not None and manager.sessions.sessions == {}


async def test_a_share_session_keeps_no_partition_of_an_unknown_topic(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        unknown = [
            sf.FetchTopic(
                topic_id=uuid.uuid4(), partitions=[sf.FetchPartition(partition_index=p) for p in range(100)]
            )
            for _ in range(1000)
        ]
        request = fetch(t, "a", 0)
        request.topics += unknown
        answer = await broker.call(request, 1)
        errors = {p.error_code for topic in answer.responses if topic.topic_id != t for p in topic.partitions}
        assert errors == {ErrorCode.UNKNOWN_TOPIC_ID}
        manager = broker.services.share_partitions
        assert manager is not None
        assert manager.sessions.sessions["sg", "a"].partitions == {(t, 0)}


async def test_a_deleted_topic_leaves_no_share_partition_lock_or_session_entry_and_comes_back_fresh(
    tmp_path: Path,
) -> None:
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 2)
        assert acquired(await broker.call(fetch(t, "a", 0), 1)) == [(0, 1, 1)]
        manager = broker.services.share_partitions
        assert manager is not None
        held = manager.existing(SharePartitionKey("sg", t, 0))
        assert held is not None
        deleted = await broker.call(DeleteTopicsRequest(topic_names=["t"], timeout_ms=1000), 5)
        assert [r.error_code for r in deleted.responses] == [ErrorCode.NONE]
        assert manager.partitions == {} and held.fenced
        assert manager.sessions.sessions["sg", "a"].partitions == set()
        again = await broker.create_topic("t")
        assert again.topic_id != t
        persister = manager.persister
        await persister.initialize(SharePartitionKey("sg", again.topic_id, 0), 0, -1)
        produce(broker, 1)
        assert acquired(await broker.call(fetch(again.topic_id, "a", 1), 1)) == [(0, 0, 1)]


async def test_a_topic_the_controller_deletes_leaves_no_share_partition_or_session_entry_on_a_broker(
    cluster_member: HandlerBroker,
) -> None:
    picture = [led_here(0, epoch=3)]
    await cluster_member.call(update_metadata(BROKERS, picture, {TOPIC: TOPIC_ID}), 8)
    await cluster_member.call(leader_and_isr(picture, {TOPIC: TOPIC_ID}), 7)
    persister = InMemorySharePersister()
    manager = SharePartitionManager.for_broker(cluster_member.config, persister)
    cluster_member.services.share_partitions = manager
    try:
        await persister.initialize(SharePartitionKey("sg", TOPIC_ID, 0), 0, -1)
        led = await cluster_member.call_over_wire(fetch(TOPIC_ID, "a", 0, partition=0), 1)
        assert only_partition(led).error_code == ErrorCode.NONE
        assert manager.existing(SharePartitionKey("sg", TOPIC_ID, 0)) is not None
        deleting = [dataclasses.replace(led_here(0, epoch=3), leader=-2)]  # LeaderDuringDelete
        await cluster_member.call(update_metadata(BROKERS, deleting, {TOPIC: TOPIC_ID}), 8)
        assert manager.partitions == {}
        assert manager.sessions.sessions["sg", "a"].partitions == set()
    finally:
        manager.close()


async def test_a_share_session_keeps_no_partition_a_known_topic_does_not_have(tmp_path: Path) -> None:
    async with share_broker(tmp_path) as (broker, t):
        request = fetch(t, "a", 0)
        request.topics[0].partitions += [sf.FetchPartition(partition_index=p) for p in range(1, 100_000)]
        request.topics[0].partitions.append(sf.FetchPartition(partition_index=-1))
        answer = await broker.call(request, 1)
        codes = {
            p.error_code for topic in answer.responses for p in topic.partitions if p.partition_index != 0
        }
        assert codes == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        manager = broker.services.share_partitions
        assert manager is not None
        assert manager.sessions.sessions["sg", "a"].partitions == {(t, 0)}


class _GatedWrites(InMemorySharePersister):
    """A persister whose writes wait for `opened` while `gated` (a share coordinator slow to answer)."""

    def __init__(self) -> None:
        super().__init__()
        self.gated = False
        self.waiting: list[SharePartitionKey] = []
        self.opened = asyncio.Event()

    async def write(
        self,
        key: SharePartitionKey,
        state_epoch: int,
        leader_epoch: int,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        delivery_complete_count: int = -1,
    ) -> None:
        if self.gated:
            self.waiting.append(key)
            await self.opened.wait()
        await super().write(key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count)


def _fetch_partitions(
    topic_id: uuid.UUID, member: str, epoch: int, partitions: list[int]
) -> sf.ShareFetchRequest:
    request = fetch(topic_id, member, epoch)
    request.topics = [
        sf.FetchTopic(
            topic_id=topic_id, partitions=[sf.FetchPartition(partition_index=p) for p in partitions]
        )
    ]
    return request


async def test_a_closed_connections_release_leaves_what_the_member_acquired_since_on_another_connection(
    tmp_path: Path,
) -> None:
    broker = HandlerBroker(tmp_path / "data")
    persister = _GatedWrites()
    manager = SharePartitionManager.for_broker(
        broker.config, persister, lambda _: {"share.auto.offset.reset": EARLIEST}
    )
    broker.services.share_partitions = manager
    try:
        t = (await broker.create_topic("t", partitions=2)).topic_id
        for p in (0, 1):
            await persister.initialize(SharePartitionKey("sg", t, p), 0, -1)
            broker.log("t", p).append(
                bytearray(build_record_batch([Record(offset=0, timestamp=1, key=None, value=b"old")]))
            )
        assert acquired(await broker.call(_fetch_partitions(t, "a", 0, [0, 1]), 1, client_port=50001)) == [
            (0, 0, 1),
            (0, 0, 1),
        ]
        # the connection closes: its release writes the first partition's state, slowly
        persister.gated = True
        release = manager.connection_closed(50001)
        while not persister.waiting:
            await asyncio.sleep(0)
        persister.gated = False
        other = 1 - persister.waiting[0].partition
        # meanwhile the member is back on another connection and acquires new records of the other one
        broker.log("t", other).append(
            bytearray(build_record_batch([Record(offset=0, timestamp=1, key=None, value=b"new")]))
        )
        again = await broker.call(_fetch_partitions(t, "a", 0, [other]), 1, client_port=50002)
        assert acquired(again) == [(1, 1, 1)]
        persister.opened.set()
        await release
        # what it acquired on the new connection is still its own: its acknowledgement is taken
        accepted = sa.ShareAcknowledgeRequest(
            group_id="sg",
            member_id="a",
            share_session_epoch=1,
            topics=[
                sa.AcknowledgeTopic(
                    topic_id=t,
                    partitions=[
                        sa.AcknowledgePartition(
                            partition_index=other, acknowledgement_batches=[alone(1, 1, ACCEPT)]
                        )
                    ],
                )
            ],
        )
        assert acknowledge_errors(await broker.call(accepted, 1, client_port=50002)) == [ErrorCode.NONE]
    finally:
        manager.close()
        broker.close()


async def test_records_deleted_under_a_share_partition_move_its_start_offset_instead_of_stalling_it(
    tmp_path: Path,
) -> None:
    """Records the share group had not acquired were deleted from the log (retention, DeleteRecords):
    every ShareFetch read from the share partition's start, under the log start offset, met
    OFFSET_OUT_OF_RANGE and acquired nothing, for good on a single node (only a new leader epoch read
    the state again). As Kafka 4.4's updateCacheAndOffsets, available records before the log start are
    archived and the start offset moves there; the fetch acquires what follows."""
    async with share_broker(tmp_path) as (broker, t):
        produce(broker, 3)
        produce(broker, 3)
        first = await broker.call_over_wire(fetch(t, "a", 0, max_records=1, share_acquire_mode=1), 2)
        assert acquired(first) == [(0, 0, 1)]
        broker.log("t").increment_log_start_offset(4)  # DeleteRecords: 0-3 gone, 0 still held by a
        again = await broker.call_over_wire(fetch(t, "a", 1), 2)
        assert only_partition(again).error_code == ErrorCode.NONE
        assert acquired(again) == [(4, 5, 1)]
        # what a held before the log start is still its own to acknowledge
        done = await broker.call_over_wire(fetch(t, "a", 2, [batch(0, 0, ACCEPT)], max_records=1), 2)
        assert only_partition(done).acknowledge_error_code == ErrorCode.NONE
