"""Two-phase commit (KIP-939) request by request: a transaction prepared through one connection (the
process that wrote it) is committed or aborted through another (a process that took over), a 2PC
transaction is never aborted for its age, and a broker that does not enable 2PC refuses it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_acls import DescribeAclsRequest
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest
from odradek.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from tests.support.acls import grant, sasl_client, start_acl_broker
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.txn_wire import (
    add_partitions,
    committed_values,
    create_topics,
    end_txn,
    init,
    init_2pc,
    produce,
    read_committed,
)

pytestmark = pytest.mark.timeout(120)
E = ErrorCode
CLEANUP_MS = 200
SETTINGS = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(CLEANUP_MS),
    "transaction.two.phase.commit.enable": "true",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("twopc") / "data", SETTINGS).start()
    try:
        yield process
    finally:
        process.stop()


def prepare(port: int, topic: str, txn_id: str, values: list[bytes]) -> tuple[int, int]:
    """The first phase, on a connection of its own: every record produced and acknowledged, nothing
    committed. Returns the producer id and epoch the transaction was written with."""
    with RawClient(port) as client:
        create_topics(client, topic)
        answer = init_2pc(client, txn_id, keep_prepared=False)
        assert answer.error_code == E.NONE
        pid, epoch = answer.producer_id, answer.producer_epoch
        assert add_partitions(client, txn_id, pid, epoch, topic) is E.NONE
        assert produce(client, topic, values, pid, epoch, 0, True, txn_id)[0] is E.NONE
        return pid, epoch


@pytest.mark.parametrize("committed", [True, False])
def test_a_prepared_transaction_is_finished_by_another_process(
    broker: BrokerProcess, committed: bool
) -> None:
    topic = f"twopc-{committed}"
    pid, epoch = prepare(broker.port, topic, f"{topic}-txn", [b"a", b"b"])
    with RawClient(broker.port) as other:
        assert produce(other, topic, [b"plain"])[0] is E.NONE
        assert read_committed(other, topic).last_stable_offset == 0  # still open
        answer = init_2pc(other, f"{topic}-txn", keep_prepared=True)
        assert answer.error_code == E.NONE
        # The transaction is handed over under a bumped epoch, naming the pair it was written with.
        assert (answer.ongoing_txn_producer_id, answer.ongoing_txn_producer_epoch) == (pid, epoch)
        assert (answer.producer_id, answer.producer_epoch) == (pid, epoch + 1)
        error = end_txn(other, f"{topic}-txn", answer.producer_id, answer.producer_epoch, committed)
        assert error is E.NONE
        fetched = read_committed(other, topic)
        assert fetched.last_stable_offset == fetched.high_watermark == 4  # a, b, plain, marker
        assert committed_values(fetched) == ([b"a", b"b", b"plain"] if committed else [b"plain"])


def test_the_process_that_prepared_is_fenced_once_another_takes_over(broker: BrokerProcess) -> None:
    pid, epoch = prepare(broker.port, "twopc-fenced", "fenced-txn", [b"prepared"])
    with RawClient(broker.port) as client:
        answer = init_2pc(client, "fenced-txn", keep_prepared=True)
        assert answer.error_code == E.NONE
        assert end_txn(client, "fenced-txn", pid, epoch, committed=False) is E.PRODUCER_FENCED
        assert (
            produce(client, "twopc-fenced", [b"late"], pid, epoch, 1, True, "fenced-txn")[0]
            is E.INVALID_PRODUCER_EPOCH
        )
        assert end_txn(client, "fenced-txn", pid, answer.producer_epoch, committed=True) is E.NONE
        assert committed_values(read_committed(client, "twopc-fenced")) == [b"prepared"]


def test_keep_prepared_without_a_transaction_names_none(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as client:
        first = init_2pc(client, "idle-txn", keep_prepared=True)
        again = init_2pc(client, "idle-txn", keep_prepared=True)
    assert first.error_code == again.error_code == E.NONE
    assert (again.ongoing_txn_producer_id, again.ongoing_txn_producer_epoch) == (-1, -1)
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, first.producer_epoch + 1)


def test_without_keep_prepared_the_ongoing_transaction_is_aborted(broker: BrokerProcess) -> None:
    pid, epoch = prepare(broker.port, "twopc-dropped", "dropped-txn", [b"dropped"])
    with RawClient(broker.port) as client:
        answer = init_2pc(client, "dropped-txn", keep_prepared=False)
        assert answer.error_code == E.NONE
        assert (answer.ongoing_txn_producer_id, answer.ongoing_txn_producer_epoch) == (-1, -1)
        assert (answer.producer_id, answer.producer_epoch) == (pid, epoch + 2)  # fenced, then its own
        fetched = read_committed(client, "twopc-dropped")
        assert fetched.last_stable_offset == fetched.high_watermark == 2  # dropped + ABORT
        assert committed_values(fetched) == []


def test_a_2pc_transaction_is_not_aborted_for_its_age_while_an_ordinary_one_is(
    broker: BrokerProcess,
) -> None:
    timeout_ms = 1000
    with RawClient(broker.port) as client:
        create_topics(client, "twopc-aged", "ordinary-aged")
        two_pc = init_2pc(client, "aged-2pc", keep_prepared=False, timeout_ms=timeout_ms)
        assert two_pc.error_code == E.NONE
        pid, epoch = two_pc.producer_id, two_pc.producer_epoch
        assert add_partitions(client, "aged-2pc", pid, epoch, "twopc-aged") is E.NONE
        assert produce(client, "twopc-aged", [b"waits"], pid, epoch, 0, True, "aged-2pc")[0] is E.NONE
        o_pid, _, o_epoch = init(client, "aged-ordinary", timeout_ms=timeout_ms)
        assert add_partitions(client, "aged-ordinary", o_pid, o_epoch, "ordinary-aged") is E.NONE
        assert (
            produce(client, "ordinary-aged", [b"abandoned"], o_pid, o_epoch, 0, True, "aged-ordinary")[0]
            is E.NONE
        )
        deadline = time.monotonic() + 60
        # The ordinary transaction, started after the 2PC one with the same timeout, is aborted by the
        # coordinator's periodic check; that same check left the 2PC transaction open.
        while read_committed(client, "ordinary-aged").last_stable_offset == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(3 * CLEANUP_MS / 1000)  # and the checks after it
        assert read_committed(client, "twopc-aged").last_stable_offset == 0
        described = client.request(DescribeTransactionsRequest(transactional_ids=["aged-2pc"]), 0)
        state = described.transaction_states[0]
        assert (state.transaction_state, state.producer_epoch) == ("Ongoing", epoch)
        assert end_txn(client, "aged-2pc", pid, epoch, committed=True) is E.NONE
        assert committed_values(read_committed(client, "twopc-aged")) == [b"waits"]


def test_a_prepared_transaction_survives_a_broker_crash_and_is_committed_after(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        pid, epoch = prepare(broker.port, "twopc-crash", "crash-txn", [b"kept"])
        broker.kill()
        broker.start()
        with RawClient(broker.port) as client:
            deadline = time.monotonic() + 30
            while (answer := init_2pc(client, "crash-txn", keep_prepared=True)).error_code != E.NONE:
                assert answer.error_code in (E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR)
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert (answer.ongoing_txn_producer_id, answer.ongoing_txn_producer_epoch) == (pid, epoch)
            assert end_txn(client, "crash-txn", pid, answer.producer_epoch, committed=True) is E.NONE
            assert committed_values(read_committed(client, "twopc-crash")) == [b"kept"]
    finally:
        broker.stop()


def test_two_phase_commit_is_refused_unless_the_broker_enables_it(tmp_path: Path) -> None:
    settings = {k: v for k, v in SETTINGS.items() if k != "transaction.two.phase.commit.enable"}
    broker = BrokerProcess(tmp_path / "data", settings).start()
    try:
        with RawClient(broker.port) as client:
            refused = init_2pc(client, "no-2pc", keep_prepared=False)
            assert refused.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            # Keeping a prepared transaction alone is not 2PC, and a v6 request without either is
            # an ordinary InitProducerId.
            assert init_2pc(client, "no-2pc", keep_prepared=True, enable_2pc=False).error_code == E.NONE
            assert init_2pc(client, "no-2pc", keep_prepared=False, enable_2pc=False).error_code == E.NONE
    finally:
        broker.stop()


def test_two_phase_commit_needs_the_two_phase_commit_acl_on_the_transactional_id(tmp_path: Path) -> None:
    extra = {"transaction.state.log.num.partitions": "3", "transaction.two.phase.commit.enable": "true"}
    broker, port = start_acl_broker(tmp_path / "data", extra)
    admin, alice = sasl_client(port, "admin"), sasl_client(port, "alice")
    try:
        grant(admin, "User:alice", ResourceType.TRANSACTIONAL_ID, "acl-2pc", AclOperation.WRITE)
        assert (
            init_2pc(alice, "acl-2pc", keep_prepared=False).error_code
            == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        )
        assert init_2pc(alice, "acl-2pc", keep_prepared=False, enable_2pc=False).error_code == E.NONE
        grant(admin, "User:alice", ResourceType.TRANSACTIONAL_ID, "acl-2pc", AclOperation.TWO_PHASE_COMMIT)
        described = admin.request(
            DescribeAclsRequest(
                resource_type_filter=ResourceType.TRANSACTIONAL_ID,
                resource_name_filter="acl-2pc",
                pattern_type_filter=PatternType.LITERAL,
                principal_filter="User:alice",
                host_filter=None,
                operation=AclOperation.TWO_PHASE_COMMIT,
                permission_type=AclPermissionType.ALLOW,
            ),
            3,
        )
        assert [a.operation for r in described.resources for a in r.acls] == [
            AclOperation.TWO_PHASE_COMMIT
        ], described
        assert init_2pc(alice, "acl-2pc", keep_prepared=False).error_code == E.NONE
        # TWO_PHASE_COMMIT alone, without WRITE, is not enough.
        grant(admin, "User:bob", ResourceType.TRANSACTIONAL_ID, "acl-2pc", AclOperation.TWO_PHASE_COMMIT)
        with sasl_client(port, "bob") as bob:
            assert (
                init_2pc(bob, "acl-2pc", keep_prepared=False).error_code
                == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            )
    finally:
        admin.close()
        alice.close()
        broker.stop()
