"""Client regex jobs through a running broker: anonymous ListTransactions (which need no ACL) do not hold
up a consumer group member's regex, one principal has one job at a time, and a job whose connection
closed stops.

The transactional ids are long random runs of `a` and `x`, on which COSTLY costs RE2 itself (its DFA
gives up) ~0.2 s of CPU each: matching it against all of them takes the worker's whole 5 s budget."""

from __future__ import annotations

import random
import select
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.txn_wire import init

pytestmark = pytest.mark.timeout(300)

COSTLY = "(?:[ax]*a[ax]{30}|[ax]*x[ax]{30}){10}"
IDS = [
    format(bits, "030000b").translate(str.maketrans("01", "ax"))
    for bits in (random.Random(11).getrandbits(30_000) for _ in range(40))
]
ATTACKERS = 30


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(
        Path(tmp_path_factory.mktemp("regex-queue")) / "data",
        {"offsets.topic.num.partitions": "1", "transaction.state.log.num.partitions": "1"},
    ).start()
    try:
        with RawClient(process.port, timeout=30) as admin:
            _wait_for_coordinators(admin)
            for transactional_id in IDS:
                assert init(admin, transactional_id)[1] == ErrorCode.NONE
        yield process
    finally:
        process.stop()


def _wait_for_coordinators(client: RawClient) -> None:
    deadline = time.monotonic() + 60
    for key_type in (0, 1):
        while True:
            found = client.request(FindCoordinatorRequest(key="probe", key_type=key_type), 3)
            if found.error_code == ErrorCode.NONE:
                break
            assert time.monotonic() < deadline, found
            time.sleep(0.1)


def _list_costly(client: RawClient) -> None:
    request = ListTransactionsRequest(
        state_filters=[], producer_id_filters=[], transactional_id_pattern=COSTLY
    )
    client.send(request, 2)


def _join(client: RawClient, regex: str) -> ConsumerGroupHeartbeatRequest:
    return client.request(
        ConsumerGroupHeartbeatRequest(
            group_id=f"member-{uuid.uuid4()}",
            member_id=str(uuid.uuid4()),
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_regex=regex,
            topic_partitions=[],
        ),
        1,
    )


def test_a_members_join_waited_behind_anonymous_list_transactions(broker: BrokerProcess) -> None:
    """One worker and one unbounded FIFO: a member joining with `orders.*` waited 13 s behind 30
    anonymous ListTransactions. Now the first of those runs, the other 29 (the same principal) are
    refused at once, and the join's check has a worker of its own."""
    attackers = [RawClient(broker.port, timeout=120, client_id="attacker") for _ in range(ATTACKERS)]
    try:
        for attacker in attackers:
            _list_costly(attacker)
        with RawClient(broker.port, timeout=60) as member:
            joined = _join(member, "orders.*")
        assert joined.error_code == ErrorCode.NONE, joined
        answered = select.select([attacker.sock for attacker in attackers], [], [], 0)[0]
        assert len(answered) < ATTACKERS, "the join was answered after every ListTransactions"
        answers = [attacker.receive(66, 2)[1] for attacker in attackers]
    finally:
        for attacker in attackers:
            attacker.close()
    codes = sorted(answer.error_code for answer in answers)
    # One ran (matched, or refused for its CPU time); the others were refused at once, not queued.
    assert codes.count(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) == ATTACKERS - 1, codes


def test_a_closed_connections_regex_job_ran_on(broker: BrokerProcess) -> None:
    """Closing the connection did not abandon its job: connect-send-close loops kept the worker busy (and
    queued jobs without bound). Now the worker running it is killed once the connection closes."""
    assert broker.process is not None
    idle = {pid: _cpu_ticks(pid) for pid in _regex_workers(broker.process.pid)}
    attacker = RawClient(broker.port, timeout=30, client_id="attacker")
    _list_costly(attacker)
    busy = _busy_worker(broker.process.pid, idle)
    attacker.close()
    deadline = time.monotonic() + 30  # the job alone would take the worker's 5 s of CPU
    while _alive(busy):
        assert time.monotonic() < deadline, "the worker kept running the closed connection's job"
        time.sleep(0.05)
    with RawClient(broker.port, timeout=30) as client:  # the same (anonymous) principal is served again
        request = ListTransactionsRequest(
            state_filters=[], producer_id_filters=[], transactional_id_pattern="a.*"
        )
        assert client.request(request, 2).error_code == ErrorCode.NONE


def _regex_workers(broker_pid: int) -> list[int]:
    workers = []
    for task in Path(f"/proc/{broker_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"odradek.coordinator.regex_worker" in cmdline:
                workers.append(int(child))
    return workers


def _busy_worker(broker_pid: int, idle: dict[int, int]) -> int:
    """The regex worker whose CPU time moves (started for the job, or one that was idle before)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for pid in _regex_workers(broker_pid):
            if _alive(pid) and _cpu_ticks(pid) > idle.get(pid, 0) + 5:
                return pid
        time.sleep(0.02)
    raise AssertionError("no regex worker took the job")


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0
    return int(fields[11]) + int(fields[12])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
