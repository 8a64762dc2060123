"""KIP-890 part 1 on a leader (partition/txn_verification.py): what it asks another broker's
transaction coordinator, and for which producer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from odradek.config.broker import BrokerConfig
from odradek.partition.leadership import Leadership, Refusal
from odradek.partition.txn_verification import TxnVerification
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.records.batch import build_record_batch
from odradek.protocol.records.record import Record
from odradek.storage.log_manager import LogManager

COORDINATOR_NODE = 2


def transactional_batch(producer_id: int, producer_epoch: int) -> bytes:
    return build_record_batch(
        [Record(0, 1_700_000_000_000, b"k", b"v")],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=0,
        is_transactional=True,
    )


class LeadsEverything:
    def leader_refusal(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Refusal | None:
        return None


class NoOpenTransactions:
    """Logs whose producer state holds no producer yet."""

    @dataclass
    class _State:
        def last_entry(self, producer_id: int) -> None:
            return None

    @dataclass
    class _Log:
        producer_state: NoOpenTransactions._State = field(default_factory=lambda: NoOpenTransactions._State())

    def get_log(self, topic: str, partition: int) -> NoOpenTransactions._Log:
        return NoOpenTransactions._Log()


class CoordinatorElsewhere:
    def coordinator_node(self, transactional_id: str) -> int | None:
        return COORDINATOR_NODE

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> ErrorCode:
        raise AssertionError("the coordinator is another broker")


class TransactionHolding:
    """Another broker's coordinator whose one ongoing transaction (producer 7, epoch 0) holds both
    partitions."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, int, list[tuple[str, int]]]] = []

    async def verify(
        self,
        node: int | None,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        self.asked.append((producer_id, producer_epoch, list(partitions)))
        ongoing = (producer_id, producer_epoch) == (7, 0)
        return dict.fromkeys(partitions, ErrorCode.NONE if ongoing else ErrorCode.INVALID_TXN_STATE)

    def close(self) -> None:
        pass


def test_a_produce_whose_transactional_batches_name_two_producers_is_refused_not_verified_as_the_first() -> (
    None
):
    """A leader verified every transactional partition of a request under the first batch's producer: a
    batch of another producer (no transaction holds it here) rode on the first's verification and was
    appended, a transaction nobody ends pinning the partition's last stable offset. As Kafka 3.9's
    ReplicaManager.handleProduceAppend, transactional batches of more than one producer are
    INVALID_PRODUCER_ID_MAPPING, and nothing is asked."""
    remote = TransactionHolding()
    verification = TxnVerification(
        1,
        BrokerConfig({}, warn_unknown=False),
        cast(Leadership, LeadsEverything()),
        cast(LogManager, NoOpenTransactions()),
        remote,
    )
    partitions = [("t", 0, transactional_batch(7, 0)), ("t", 1, transactional_batch(8, 0))]

    verdicts = asyncio.run(verification.verify("txn", CoordinatorElsewhere(), partitions))

    assert verdicts == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ("t", 1): ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    }
    assert remote.asked == []


def test_a_produce_of_one_transactional_producer_is_verified_with_the_coordinator_on_another_broker() -> None:
    remote = TransactionHolding()
    verification = TxnVerification(
        1,
        BrokerConfig({}, warn_unknown=False),
        cast(Leadership, LeadsEverything()),
        cast(LogManager, NoOpenTransactions()),
        remote,
    )
    partitions = [("t", 0, transactional_batch(7, 0)), ("t", 1, transactional_batch(7, 0)), ("u", 0, None)]

    verdicts = asyncio.run(verification.verify("txn", CoordinatorElsewhere(), partitions))

    assert verdicts == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    assert remote.asked == [(7, 0, [("t", 0), ("t", 1)])]
