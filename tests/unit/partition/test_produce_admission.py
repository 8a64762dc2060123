"""A Produce's admission and record work in partition/ (produce_admission.py, produce_records.py), asked
with what they read and no request context: Kafka's order of refusals before any record is read
(ReplicaManager.appendToLocalLog, Partition.appendRecordsToLeader), and which partitions need a job."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pytest

from odradek.partition.leadership import Leadership, Refusal
from odradek.partition.produce_admission import Admitted, ProduceAdmission
from odradek.partition.produce_records import record_jobs, stale
from odradek.partition.txn_verification import Verdicts
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.produce import PartitionProduceData, PartitionProduceResponse
from odradek.protocol.records import Compression, Record, build_message_set
from odradek.storage.log import Log
from odradek.storage.log_manager import LogManager
from odradek.storage.prepared_appends import PreparedAppend
from tests.unit.storage.helpers import FakeClock, batch, open_log


@dataclass
class Leading:
    """Leads every partition at `epoch` unless it refuses; `under_min_isr` for acks=-1."""

    epoch: int = 3
    refused: Refusal | None = None
    under_min: bool = False

    def leader_refusal(self, topic: str, partition: int, current_leader_epoch: int = -1) -> Refusal | None:
        return self.refused

    def leader_epoch(self, topic: str, partition: int) -> int | None:
        return None if self.refused else self.epoch

    def under_min_isr(self, topic: str, partition: int) -> bool:
        return self.under_min


@dataclass
class OneLog:
    log: Log | None
    asked: list[tuple[str, int]] = field(default_factory=list)

    def get_log(self, topic: str, partition: int) -> Log | None:
        self.asked.append((topic, partition))
        return self.log


@dataclass
class Topic:
    is_internal: bool = False


@dataclass
class Metadata:
    internal: bool = False

    def topic(self, name: str) -> Topic | None:
        return Topic(self.internal)

    def partition(self, topic: str, partition: int) -> object | None:
        return object()


@dataclass
class Header:
    request_api_key: int = 0


@dataclass
class ErrorCounts:
    unexpected_errors: Counter[int] = field(default_factory=Counter)


@dataclass
class Request:
    """What partition/errors.py logs of an unexpected failure."""

    header: Header = field(default_factory=Header)
    services: ErrorCounts = field(default_factory=ErrorCounts)
    client_host: str = "127.0.0.1"
    client_port: int = 1


def admission(
    log: Log | None,
    leadership: Leading,
    *,
    acks: int = -1,
    internal: bool = False,
    api_version: int = 9,
    verdicts: Verdicts | None = None,
) -> ProduceAdmission:
    return ProduceAdmission(
        leadership=cast(Leadership, leadership),
        logs=cast(LogManager, OneLog(log)),
        metadata=Metadata(internal),
        transactions=None,
        context=Request(),
        api_version=api_version,
        acks=acks,
        transactional_id=None,
        verdicts=verdicts,
    )


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return open_log(tmp_path / "t-0", FakeClock())


def refused(answer: Admitted | PartitionProduceResponse) -> ErrorCode:
    assert isinstance(answer, PartitionProduceResponse)
    assert answer.base_offset == -1
    return ErrorCode(answer.error_code)


def test_a_partition_led_elsewhere_is_refused_first_naming_its_leader_and_its_log_is_not_looked_at() -> None:
    logs = OneLog(None)
    leadership = Leading(refused=Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, leader_id=2, leader_epoch=7))
    checks = ProduceAdmission(
        cast(Leadership, leadership), cast(LogManager, logs), Metadata(), None, Request(), 9, 5, None, None
    )

    answer = checks.admit("t", PartitionProduceData(index=0, records=b"not a batch"))

    assert refused(answer) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert isinstance(answer, PartitionProduceResponse)
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (2, 7)
    assert logs.asked == []


def test_refusals_come_in_kafkas_order_records_acks_internal_topic_min_isr_transaction(log: Log) -> None:
    """Each step of the order is shown by a partition that every later check would refuse too."""
    good = bytes(batch())
    txn = bytes(batch(producer_id=7, producer_epoch=0, base_sequence=0, transactional=True))
    under = Leading(under_min=True)

    def answer(records: bytes, checks: ProduceAdmission) -> ErrorCode:
        return refused(checks.admit("t", PartitionProduceData(index=0, records=records)))

    assert answer(good + good, admission(log, under, acks=2, internal=True)) is ErrorCode.INVALID_RECORD
    assert answer(txn, admission(log, under, acks=2, internal=True)) is ErrorCode.INVALID_REQUIRED_ACKS
    assert answer(txn, admission(log, under, internal=True)) is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert answer(txn, admission(log, under)) is ErrorCode.NOT_ENOUGH_REPLICAS
    # no transaction coordinator here: a transactional batch is in no ongoing transaction
    assert answer(txn, admission(log, Leading())) is ErrorCode.INVALID_TXN_STATE
    verified = admission(log, Leading(), verdicts={("t", 0): ErrorCode.NONE})
    assert isinstance(verified.admit("t", PartitionProduceData(index=0, records=txn)), Admitted)


def test_admitted_again_leadership_is_asked_again_and_the_records_are_not_checked_again(log: Log) -> None:
    leadership = Leading(epoch=3)
    checks = admission(log, leadership)
    data = PartitionProduceData(index=0, records=bytes(batch()))
    first = checks.admit("t", data)
    assert isinstance(first, Admitted)
    assert (first.log, first.leader_epoch, first.message_set) == (log, 3, False)

    leadership.epoch = 4
    data.records = b"records not read again"
    again = checks.admit("t", data, first)
    assert isinstance(again, Admitted)
    assert again.leader_epoch == 4
    assert again.records is first.records

    leadership.refused = Refusal(ErrorCode.NOT_LEADER_OR_FOLLOWER, leader_id=2, leader_epoch=5)
    assert refused(checks.admit("t", data, first)) is ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_an_old_producers_message_set_is_admitted_for_conversion_unverified(log: Log) -> None:
    message_set = build_message_set([Record(0, 1_700_000_000_000, None, b"v")], magic=1)
    answer = admission(log, Leading(), api_version=2).admit(
        "t", PartitionProduceData(index=0, records=message_set)
    )

    assert isinstance(answer, Admitted)
    assert answer.message_set


def test_record_jobs_are_made_for_the_partitions_that_need_record_work_only(tmp_path: Path) -> None:
    clock = FakeClock()
    as_produced = open_log(tmp_path / "a-0", clock)
    in_lz4 = open_log(tmp_path / "b-0", clock, compression_type="lz4")
    admitted = {
        ("a", 0): Admitted(as_produced, 0, batch(compression=Compression.GZIP), message_set=False),
        ("b", 0): Admitted(in_lz4, 0, batch(compression=Compression.GZIP), message_set=False),
    }

    jobs = record_jobs(admitted)

    assert list(jobs) == [("b", 0)]
    prepared = jobs[("b", 0)](lambda: None)
    assert prepared.stored is not None  # rewritten in lz4
    assert stale(admitted, {("b", 0): prepared}) == {}
    in_lz4.config = open_log(tmp_path / "c-0", clock, compression_type="zstd").config
    assert stale(admitted, {("b", 0): prepared}) == {("b", 0): admitted[("b", 0)]}
    assert stale(admitted, {("b", 0): PreparedAppend(in_lz4.config, admitted[("b", 0)].records)}) == {}
