"""The transaction marker channel (cluster mode): markers for partitions led elsewhere go to their
leaders in WriteTxnMarkers v1, batched per broker, sent again after NOT_LEADER_OR_FOLLOWER or a failed
connection to whoever leads the partition then; a transaction completes when all its markers are in.
Fake brokers answer as told."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker, PartitionState, TopicState
from odradek.config.broker import BrokerConfig
from odradek.coordinator.txn_marker_channel import PendingMarkers, TxnMarkerChannel
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.write_txn_markers import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from odradek.server.txn_marker_sender import InterBrokerTxnMarkerSender
from tests.support.async_waits import until
from tests.support.fake_broker import FakeBroker, Received

SELF = 1


def _answer(error: Callable[[str, int], ErrorCode]) -> Callable[[Received], Awaitable[Any]]:
    async def respond(received: Received) -> Any:
        request: WriteTxnMarkersRequest = received.body
        return WriteTxnMarkersResponse(
            markers=[
                WritableTxnMarkerResult(
                    producer_id=marker.producer_id,
                    topics=[
                        WritableTxnMarkerTopicResult(
                            name=topic.name,
                            partitions=[
                                WritableTxnMarkerPartitionResult(
                                    partition_index=p, error_code=error(topic.name, p)
                                )
                                for p in topic.partition_indexes
                            ],
                        )
                        for topic in marker.topics
                    ],
                )
                for marker in request.markers
            ]
        )

    return respond


class Harness:
    def __init__(self, leaders: dict[int, int], brokers: dict[int, FakeBroker]) -> None:
        self.cluster = ClusterMetadata("c", 1, [])
        self.cluster.set_live_brokers(
            [
                LiveBroker(node, {"PLAINTEXT": BrokerEndpoint(node, fake.host, fake.port)})
                for node, fake in brokers.items()
            ]
        )
        self.cluster.add_topic(
            TopicState(
                "t",
                uuid.uuid4(),
                [PartitionState(p, leader, 1, [leader], [leader]) for p, leader in sorted(leaders.items())],
            )
        )
        self.local: list[tuple[str, int]] = []
        #: What the next local writes raise (an unexpected failure of the append).
        self.local_failures: list[Exception] = []
        self.completed: list[str] = []
        self.wanted = True
        config = BrokerConfig({"node.id": str(SELF)}, warn_unknown=False)
        self.channel = TxnMarkerChannel(
            self.cluster,
            SELF,
            InterBrokerTxnMarkerSender(config, self.cluster, SELF),
            write_local=self._write_local,
            still_wanted=lambda txn: self.wanted,
            on_complete=self._complete,
        )

    def _write_local(self, txn: PendingMarkers, tp: tuple[str, int]) -> Awaitable[ErrorCode]:
        self.local.append(tp)  # appended at the call, as the marker writer does
        if self.local_failures:
            raise self.local_failures.pop(0)
        return _at_once(ErrorCode.NONE)

    async def _complete(self, txn: PendingMarkers) -> None:
        self.completed.append(txn.transactional_id)

    def lead(self, partition: int, leader: int) -> None:
        state = self.cluster.partition("t", partition)
        assert state is not None
        state.leader_id = leader
        state.leader_epoch += 1


async def _at_once(error: ErrorCode) -> ErrorCode:
    return error


def _txn(name: str, producer_id: int, *partitions: int) -> PendingMarkers:
    return PendingMarkers(name, producer_id, 0, True, 3, {("t", p) for p in partitions})


@pytest.fixture
def brokers() -> Iterator[dict[int, FakeBroker]]:
    made = {2: FakeBroker(2), 3: FakeBroker(3)}
    yield made


async def _started(brokers: dict[int, FakeBroker]) -> None:
    for fake in brokers.values():
        await fake.start()


async def _stopped(harness: Harness, brokers: dict[int, FakeBroker]) -> None:
    harness.channel.stop()
    for fake in brokers.values():
        await fake.stop()


def test_markers_of_two_transactions_reach_the_other_leader_in_one_request(
    brokers: dict[int, FakeBroker],
) -> None:
    async def main() -> None:
        await _started(brokers)
        brokers[2].responder = _answer(lambda topic, p: ErrorCode.NONE)
        harness = Harness({0: 2, 1: 2, 2: SELF}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0, 2))
            harness.channel.send(_txn("b", 11, 1))
            await until(lambda: sorted(harness.completed) == ["a", "b"])
            (request,) = brokers[2].requests_of(ApiKey.WRITE_TXN_MARKERS)
            assert [(m.producer_id, m.topics[0].partition_indexes) for m in request.markers] == [
                (10, [0]),
                (11, [1]),
            ]
            assert request.markers[0].coordinator_epoch == 3 and request.markers[0].transaction_result
            assert harness.local == [("t", 2)]  # its own partition written directly
            assert not harness.channel.pending
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_not_leader_sends_the_marker_again_to_the_new_leader(brokers: dict[int, FakeBroker]) -> None:
    async def main() -> None:
        await _started(brokers)
        brokers[2].responder = _answer(lambda topic, p: ErrorCode.NOT_LEADER_OR_FOLLOWER)
        brokers[3].responder = _answer(lambda topic, p: ErrorCode.NONE)
        harness = Harness({0: 2}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0))
            await brokers[2].wait_for(lambda b: len(b.requests_of(ApiKey.WRITE_TXN_MARKERS)) >= 2)
            assert harness.completed == []  # refused: never complete without the marker
            harness.lead(0, 3)  # the controller's UpdateMetadata names the new leader
            await until(lambda: harness.completed == ["a"])
            assert len(brokers[3].requests_of(ApiKey.WRITE_TXN_MARKERS)) == 1
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_a_leader_refusing_the_marker_under_min_insync_replicas_is_sent_it_until_it_takes_it(
    brokers: dict[int, FakeBroker],
) -> None:
    async def main() -> None:
        await _started(brokers)
        answers = [ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NONE]
        brokers[2].responder = _answer(lambda topic, p: answers.pop(0))
        harness = Harness({0: 2}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0))
            await until(lambda: harness.completed == ["a"])
            assert len(brokers[2].requests_of(ApiKey.WRITE_TXN_MARKERS)) == 3
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_a_leader_that_does_not_know_the_partition_yet_is_sent_the_marker_until_it_does(
    brokers: dict[int, FakeBroker],
) -> None:
    """UNKNOWN_TOPIC_OR_PARTITION is retried, as Kafka's completion handler does: a leader whose own
    LeaderAndIsr is late answers it, and taking it as done would leave the transaction open there."""

    async def main() -> None:
        await _started(brokers)
        answers = [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NONE]
        brokers[2].responder = _answer(lambda topic, p: answers.pop(0))
        harness = Harness({0: 2}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0))
            await until(lambda: harness.completed == ["a"])
            assert len(brokers[2].requests_of(ApiKey.WRITE_TXN_MARKERS)) == 2
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_a_partition_deleted_while_its_marker_is_refused_is_skipped(brokers: dict[int, FakeBroker]) -> None:
    async def main() -> None:
        await _started(brokers)
        brokers[2].responder = _answer(lambda topic, p: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        harness = Harness({0: 2}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0))
            await brokers[2].wait_for(lambda b: len(b.requests_of(ApiKey.WRITE_TXN_MARKERS)) >= 2)
            assert harness.completed == []
            harness.cluster.remove_topic("t")  # the controller's UpdateMetadata says it is gone
            await until(lambda: harness.completed == ["a"])
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_a_local_marker_whose_append_raises_is_written_again_and_the_others_still_go_out(
    brokers: dict[int, FakeBroker],
) -> None:
    async def main() -> None:
        await _started(brokers)
        brokers[2].responder = _answer(lambda topic, p: ErrorCode.NONE)
        harness = Harness({0: SELF, 1: 2}, brokers)
        harness.local_failures.append(OSError("No space left on device"))
        try:
            harness.channel.send(_txn("a", 10, 0, 1))
            await until(lambda: harness.completed == ["a"])
            assert harness.local == [("t", 0), ("t", 0)]
            assert len(brokers[2].requests_of(ApiKey.WRITE_TXN_MARKERS)) == 1
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_a_broker_that_cannot_be_reached_gets_the_marker_once_it_listens(
    brokers: dict[int, FakeBroker],
) -> None:
    async def main() -> None:
        await _started(brokers)
        port = brokers[2].port
        await brokers[2].stop()  # its registration stays known: connections are refused
        harness = Harness({0: 2}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0))
            await asyncio.sleep(0.5)
            assert harness.completed == []
            brokers[2].port = port
            brokers[2].responder = _answer(lambda topic, p: ErrorCode.NONE)
            await brokers[2].start()
            await until(lambda: harness.completed == ["a"])
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())


def test_a_partition_without_leader_waits_and_a_moved_coordinator_drops_the_transaction(
    brokers: dict[int, FakeBroker],
) -> None:
    async def main() -> None:
        await _started(brokers)
        brokers[2].responder = _answer(lambda topic, p: ErrorCode.NONE)
        harness = Harness({0: -1, 1: 2}, brokers)
        try:
            harness.channel.send(_txn("a", 10, 0, 1))
            await brokers[2].wait_for(lambda b: len(b.requests_of(ApiKey.WRITE_TXN_MARKERS)) == 1)
            await asyncio.sleep(0.3)
            assert harness.completed == []  # partition 0 has no leader yet
            harness.wanted = False  # the coordinator's partition moved to another broker
            harness.lead(0, 2)
            await asyncio.sleep(0.5)
            assert harness.completed == [] and not harness.channel.pending
            assert len(brokers[2].requests_of(ApiKey.WRITE_TXN_MARKERS)) == 1
        finally:
            await _stopped(harness, brokers)

    asyncio.run(main())
