"""OffsetFetch with `require_stable` (v7+, KIP-447) through the handler, every version path: a partition
whose group has a transactional offset commit not yet settled answers UNSTABLE_OFFSET_COMMIT, asked
without it the last committed offset, as Kafka's group coordinator (hasPendingOffsetCommitsForTopicPartition).
Settled means the transaction's COMMIT marker is on the in-sync replicas, not only appended: a commit
read between the two would be the previous offset (issue 25 item 22, -1001 for a first commit)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from odradek.cluster.internal_topics import SingleNodeInternalTopics
from odradek.coordinator.group_coordinator import GroupCoordinator
from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.coordinator.txn_coordinator import TransactionCoordinator
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.protocol.messages.end_txn import EndTxnRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from odradek.protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from odradek.storage.log import Log
from odradek.storage.partition import TopicPartition
from tests.support.async_waits import until
from tests.support.handler_services import HandlerBroker

pytestmark = pytest.mark.timeout(30)
E = ErrorCode
GROUP, TXN, TOPIC = "g", "copier", "input"
#: (error, offset) of input-0 and input-1 in an OffsetFetch answer.
Answer = tuple[tuple[int, int], tuple[int, int]]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[HandlerBroker]:
    made = HandlerBroker(
        tmp_path / "data",
        **{"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"},
    )
    try:
        yield made
    finally:
        made.close()


@contextlib.asynccontextmanager
async def coordinators(broker: HandlerBroker) -> AsyncIterator[uuid.UUID]:
    """Both coordinators of a single node on the broker's services, as Broker.start wires them; yields
    the input topic's id."""
    services = broker.services
    groups = GroupCoordinator(
        services.config,
        services.cluster,
        SingleNodeInternalTopics(services.topics, services.cluster),
        services.logs,
        1,
        leadership=services.leadership,
    )
    transactions = TransactionCoordinator(
        services.config,
        services.cluster,
        SingleNodeInternalTopics(services.topics, services.cluster),
        services.logs,
        1,
        services.producer_ids,
        groups,
        leadership=services.leadership,
        marker_sender=InterBrokerTxnMarkerSender(services.config, services.cluster, services.node_id),
    )
    services.groups, services.transactions = groups, transactions
    state = await broker.create_topic(TOPIC, 2)
    await groups.start()
    await transactions.start()
    await groups.runtime.wait_loaded()
    try:
        yield state.topic_id
    finally:
        transactions.stop()
        groups.stop()


async def fetch(broker: HandlerBroker, version: int, require_stable: bool, topic_id: uuid.UUID) -> Answer:
    if version >= 8:
        topics = [OffsetFetchRequestTopics(name=TOPIC, topic_id=topic_id, partition_indexes=[0, 1])]
        request = OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id=GROUP, topics=topics)], require_stable=require_stable
        )
        (group,) = (await broker.call(request, version)).groups
        assert group.error_code == E.NONE
        (topic,) = group.topics
    else:
        request = OffsetFetchRequest(
            group_id=GROUP,
            topics=[OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0, 1])],
            require_stable=require_stable,
        )
        response = await broker.call(request, version)
        assert response.error_code == E.NONE
        (topic,) = response.topics
    first, second = sorted(topic.partitions, key=lambda p: p.partition_index)
    return (first.error_code, first.committed_offset), (second.error_code, second.committed_offset)


async def every_version(broker: HandlerBroker, topic_id: uuid.UUID) -> dict[tuple[int, bool], Answer]:
    answers = {}
    for version in range(11):
        for require_stable in (False, True) if version >= 7 else (False,):
            answers[(version, require_stable)] = await fetch(broker, version, require_stable, topic_id)
    return answers


def expected(stable: Answer, settled: Answer) -> dict[tuple[int, bool], Answer]:
    """`stable` for every version asked without require_stable, `settled` for v7+ asked with it."""
    answers = {}
    for version in range(11):
        answers[(version, False)] = stable
        if version >= 7:
            answers[(version, True)] = settled
    return answers


async def commit(broker: HandlerBroker, offsets: dict[int, int]) -> None:
    request = OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=TOPIC,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
                    for p, o in offsets.items()
                ],
            )
        ],
    )
    response = await broker.call(request, 8)
    assert {p.error_code for t in response.topics for p in t.partitions} == {E.NONE}


async def send_offsets_to_transaction(broker: HandlerBroker, offset: int) -> tuple[int, int]:
    """A transaction of `TXN` holding only the commit of `offset` for input-0; (producer id, epoch)."""
    init = await broker.call(InitProducerIdRequest(transactional_id=TXN, transaction_timeout_ms=60000), 4)
    assert init.error_code == E.NONE
    pid, epoch = init.producer_id, init.producer_epoch
    added = await broker.call(
        AddOffsetsToTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, group_id=GROUP), 3
    )
    assert added.error_code == E.NONE
    assert await txn_offset_commit(broker, pid, epoch, offset) == E.NONE
    return pid, epoch


async def txn_offset_commit(broker: HandlerBroker, pid: int, epoch: int, offset: int) -> ErrorCode:
    """`TXN`'s TxnOffsetCommit of `offset` for input-0 in `GROUP`; its answer's error."""
    committed = await broker.call(
        TxnOffsetCommitRequest(
            transactional_id=TXN,
            group_id=GROUP,
            producer_id=pid,
            producer_epoch=epoch,
            topics=[
                TxnOffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)],
                )
            ],
        ),
        3,
    )
    return ErrorCode(committed.topics[0].partitions[0].error_code)


async def end_txn(broker: HandlerBroker, pid: int, epoch: int, committed: bool) -> None:
    request = EndTxnRequest(transactional_id=TXN, producer_id=pid, producer_epoch=epoch, committed=committed)
    assert (await broker.call(request, 3)).error_code == E.NONE


def followers_hold_back(broker: HandlerBroker) -> Log:
    """`__consumer_offsets`'s high watermark from now on moved by the test only (`followers_catch_up`),
    as a leader's whose followers have not fetched yet: the partition has no leader's rule left."""
    hosted = broker.services.replicas.leading[(OFFSETS_TOPIC, 0)]
    hosted.leader_state = None
    hosted.log.auto_high_watermark = False
    return hosted.log


def followers_catch_up(broker: HandlerBroker, offsets_log: Log) -> None:
    """The high watermark `followers_hold_back` held reaches the log end, and what waits on it wakes."""
    offsets_log.update_high_watermark(offsets_log.log_end_offset)
    broker.services.appends.wake(TopicPartition(OFFSETS_TOPIC, 0))


async def test_pending_transactional_offsets_are_unstable_on_every_version_that_asks(
    broker: HandlerBroker,
) -> None:
    async with coordinators(broker) as topic_id:
        await commit(broker, {0: 1, 1: 3})
        pid, epoch = await send_offsets_to_transaction(broker, 7)
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, 1), (E.NONE, 3)), settled=((E.UNSTABLE_OFFSET_COMMIT, -1), (E.NONE, 3))
        )
        await end_txn(broker, pid, epoch, committed=True)
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, 7), (E.NONE, 3)), settled=((E.NONE, 7), (E.NONE, 3))
        )


async def test_a_partition_without_a_commit_reads_none_unless_a_transaction_commits_to_it(
    broker: HandlerBroker,
) -> None:
    async with coordinators(broker) as topic_id:
        await commit(broker, {1: 3})
        pid, epoch = await send_offsets_to_transaction(broker, 7)
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, -1), (E.NONE, 3)), settled=((E.UNSTABLE_OFFSET_COMMIT, -1), (E.NONE, 3))
        )
        await end_txn(broker, pid, epoch, committed=False)
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, -1), (E.NONE, 3)), settled=((E.NONE, -1), (E.NONE, 3))
        )


async def test_transactional_offsets_stay_unstable_until_their_commit_marker_is_on_the_in_sync_replicas(
    broker: HandlerBroker,
) -> None:
    async with coordinators(broker) as topic_id:
        await commit(broker, {1: 3})
        pid, epoch = await send_offsets_to_transaction(broker, 7)
        offsets_log = followers_hold_back(broker)
        await end_txn(broker, pid, epoch, committed=True)  # the marker is appended, not replicated
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, -1), (E.NONE, 3)), settled=((E.UNSTABLE_OFFSET_COMMIT, -1), (E.NONE, 3))
        )
        followers_catch_up(broker, offsets_log)
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, 7), (E.NONE, 3)), settled=((E.NONE, 7), (E.NONE, 3))
        )


async def test_an_offset_commit_not_yet_on_the_in_sync_replicas_is_unstable_as_in_kafka(
    broker: HandlerBroker,
) -> None:
    async with coordinators(broker) as topic_id:
        await commit(broker, {0: 1, 1: 3})
        offsets_log = followers_hold_back(broker)
        # appended, and answered once the in-sync replicas have it
        committing = asyncio.ensure_future(commit(broker, {0: 5}))
        await until(lambda: offsets_log.log_end_offset > offsets_log.high_watermark)
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, 1), (E.NONE, 3)), settled=((E.UNSTABLE_OFFSET_COMMIT, -1), (E.NONE, 3))
        )
        assert not committing.done()
        followers_catch_up(broker, offsets_log)
        await committing
        assert await every_version(broker, topic_id) == expected(
            stable=((E.NONE, 5), (E.NONE, 3)), settled=((E.NONE, 5), (E.NONE, 3))
        )
