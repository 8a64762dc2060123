"""The transaction coordinator and the partitions' side of transactions, request by request against a
broker process: coordinator lookup, producer ids and epochs, fencing, verified transactional produce,
commit and abort markers seen by a read_committed fetch, timeouts, and state replayed after a restart
and after a SIGKILL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from odradek.protocol.messages.describe_producers import DescribeProducersRequest
from odradek.protocol.messages.describe_producers import TopicRequest as DescribeProducersTopic
from odradek.protocol.messages.describe_transactions import DescribeTransactionsRequest
from odradek.protocol.messages.find_coordinator import FindCoordinatorRequest
from odradek.protocol.messages.init_producer_id import InitProducerIdRequest
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic
from odradek.protocol.messages.list_transactions import ListTransactionsRequest
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient
from tests.support.txn_wire import (
    add_partitions,
    committed_values,
    create_topics,
    end_txn,
    init,
    produce,
    read_committed,
)

pytestmark = pytest.mark.timeout(90)
E = ErrorCode
TRANSACTION_KEY = 1
#: Small so that the timeout tests are quick; the coordinator's own housekeeping runs this often.
CLEANUP_MS = 200
SETTINGS = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "3",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(CLEANUP_MS),
    "transaction.max.timeout.ms": "120000",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("txn") / "data", SETTINGS).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[RawClient]:
    with RawClient(broker.port) as raw:
        yield raw


@pytest.mark.parametrize("version", [1, 3])
def test_find_coordinator_for_a_transactional_id_is_this_broker(client: RawClient, version: int) -> None:
    response = client.request(FindCoordinatorRequest(key="txn-a", key_type=TRANSACTION_KEY), version)
    assert (response.error_code, response.node_id) == (E.NONE, 1)


def test_find_coordinator_batch_answers_every_transactional_id(client: RawClient) -> None:
    response = client.request(
        FindCoordinatorRequest(key_type=TRANSACTION_KEY, coordinator_keys=["a", "b"]), 4
    )
    assert [(c.key, c.error_code, c.node_id) for c in response.coordinators] == [("a", 0, 1), ("b", 0, 1)]


def test_init_producer_id_bumps_the_epoch_of_the_same_producer_id(client: RawClient) -> None:
    first = init(client, "bump")
    second = init(client, "bump")
    assert first[1] is second[1] is E.NONE
    assert (second[0], second[2]) == (first[0], first[2] + 1)
    plain = client.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=1000), 4)
    assert plain.producer_id not in (first[0], -1) and plain.producer_epoch == 0


def test_a_timeout_above_the_maximum_is_refused(client: RawClient) -> None:
    assert init(client, "too-long", timeout_ms=120001)[1] is E.INVALID_TRANSACTION_TIMEOUT
    assert init(client, "zero", timeout_ms=0)[1] is E.INVALID_TRANSACTION_TIMEOUT


@pytest.mark.parametrize(("version", "fenced"), [(3, E.INVALID_PRODUCER_EPOCH), (4, E.PRODUCER_FENCED)])
def test_init_with_an_old_epoch_is_a_zombie(client: RawClient, version: int, fenced: ErrorCode) -> None:
    pid, _, epoch = init(client, f"zombie-init-{version}")
    init(client, f"zombie-init-{version}")
    request = InitProducerIdRequest(
        transactional_id=f"zombie-init-{version}",
        transaction_timeout_ms=60000,
        producer_id=pid,
        producer_epoch=epoch,
    )
    assert client.request(request, version).error_code == fenced


def test_a_retried_kip_360_bump_gets_the_same_epoch_and_a_new_instance_ends_retries(
    client: RawClient,
) -> None:
    pid, _, epoch = init(client, "kip-360")

    def reinit(with_epoch: int) -> tuple[int, int, int]:
        request = InitProducerIdRequest(
            transactional_id="kip-360",
            transaction_timeout_ms=60000,
            producer_id=pid,
            producer_epoch=with_epoch,
        )
        r = client.request(request, 4)
        return r.error_code, r.producer_id, r.producer_epoch

    assert reinit(epoch) == (E.NONE, pid, epoch + 1)  # the producer's own bump
    assert reinit(epoch) == (E.NONE, pid, epoch + 1)  # its retry (the answer was lost): same epoch
    assert init(client, "kip-360") == (pid, E.NONE, epoch + 2)  # a new instance
    assert reinit(epoch)[0] == reinit(epoch + 1)[0] == E.PRODUCER_FENCED  # the old one may not come back


def test_a_stray_transactional_batch_is_refused_and_does_not_stall_read_committed(client: RawClient) -> None:
    create_topics(client, "stray")
    pid, _, epoch = init(client, "stray-producer")
    # Not added to a transaction: refused, nothing appended (it would pin the last stable offset).
    stray = produce(client, "stray", [b"stray"], pid, epoch, transactional=True, txn_id="stray-producer")
    assert stray[0] is E.INVALID_TXN_STATE
    assert produce(client, "stray", [b"plain"]) == (E.NONE, 0)
    fetched = read_committed(client, "stray")
    assert (fetched.high_watermark, fetched.last_stable_offset) == (1, 1)
    assert committed_values(fetched) == [b"plain"]


def test_a_transactional_batch_without_a_transactional_id_cannot_join_another_producers_transaction(
    client: RawClient,
) -> None:
    """A Produce carrying transactional batches but no transactional id was checked against the
    producer id's transaction alone: any client that may write the topic appended, in an ongoing
    transaction's name (its producer id, epoch and next sequence are in DescribeProducers), records the
    owner then committed, without WRITE on its transactional id. As Kafka's KafkaApis, transactional
    records need the request's transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    create_topics(client, "joined")
    pid, _, epoch = init(client, "owner")
    assert add_partitions(client, "owner", pid, epoch, "joined") is E.NONE
    assert produce(client, "joined", [b"owner"], pid, epoch, 0, True, "owner") == (E.NONE, 0)

    injected = produce(client, "joined", [b"injected"], pid, epoch, 1, transactional=True)

    assert injected[0] is E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert end_txn(client, "owner", pid, epoch, committed=True) is E.NONE
    assert committed_values(read_committed(client, "joined", max_wait_ms=500)) == [b"owner"]


def test_a_transactional_id_cannot_append_in_another_ids_producer_transaction(client: RawClient) -> None:
    """KIP-890's check asked the producer id's transaction only, not whether it is the request's
    transactional id's: a client that may write its own transactional id appended, in another id's
    ongoing transaction (its producer id and epoch are in DescribeProducers), records the owner then
    committed, and a leader's verify_only AddPartitionsToTxn was answered NONE for it. As Kafka's
    coordinator (handleVerifyPartitionsInTransaction): INVALID_PRODUCER_ID_MAPPING."""
    create_topics(client, "borrowed")
    pid, _, epoch = init(client, "lender")
    init(client, "borrower")
    assert add_partitions(client, "lender", pid, epoch, "borrowed") is E.NONE

    borrowed = produce(client, "borrowed", [b"injected"], pid, epoch, 0, True, "borrower")
    verify_only = client.request(
        AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnTransaction(
                    transactional_id="borrower",
                    producer_id=pid,
                    producer_epoch=epoch,
                    verify_only=True,
                    topics=[AddPartitionsToTxnTopic(name="borrowed", partitions=[0])],
                )
            ]
        ),
        4,
    )

    assert borrowed[0] is E.INVALID_PRODUCER_ID_MAPPING
    answered = verify_only.results_by_transaction[0].topic_results[0].results_by_partition[0]
    assert answered.partition_error_code == E.INVALID_PRODUCER_ID_MAPPING
    assert produce(client, "borrowed", [b"owner"], pid, epoch, 0, True, "lender") == (E.NONE, 0)
    assert end_txn(client, "lender", pid, epoch, committed=True) is E.NONE
    assert committed_values(read_committed(client, "borrowed", max_wait_ms=500)) == [b"owner"]


def test_commit_and_abort_as_a_read_committed_fetch_sees_them(client: RawClient) -> None:
    create_topics(client, "flow")
    pid, _, epoch = init(client, "flow-producer")
    assert add_partitions(client, "flow-producer", pid, epoch, "flow") is E.NONE
    assert produce(client, "flow", [b"c1", b"c2"], pid, epoch, 0, True, "flow-producer") == (E.NONE, 0)
    open_txn = read_committed(client, "flow")
    assert (open_txn.high_watermark, open_txn.last_stable_offset) == (2, 0)
    assert committed_values(open_txn) == []
    assert (_latest(client, "flow", read_committed=True), _latest(client, "flow", read_committed=False)) == (
        0,
        2,
    )
    assert end_txn(client, "flow-producer", pid, epoch, committed=True) is E.NONE
    assert end_txn(client, "flow-producer", pid, epoch, committed=True) is E.NONE  # a retry is fine

    assert add_partitions(client, "flow-producer", pid, epoch, "flow") is E.NONE
    assert produce(client, "flow", [b"a1"], pid, epoch, 2, True, "flow-producer")[0] is E.NONE
    assert end_txn(client, "flow-producer", pid, epoch, committed=False) is E.NONE
    assert end_txn(client, "flow-producer", pid, epoch, committed=True) is E.INVALID_TXN_STATE
    fetched = read_committed(client, "flow")
    # c1 c2 COMMIT a1 ABORT: everything is stable, the aborted transaction is listed.
    assert (fetched.high_watermark, fetched.last_stable_offset) == (5, 5)
    assert [(a.producer_id, a.first_offset) for a in fetched.aborted_transactions] == [(pid, 3)]
    assert committed_values(fetched) == [b"c1", b"c2"]
    assert _latest(client, "flow", read_committed=True) == 5


def _latest(client: RawClient, topic: str, read_committed: bool) -> int:
    """ListOffsets latest: the last stable offset under read_committed, the high watermark otherwise."""
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=1 if read_committed else 0,
        topics=[
            ListOffsetsTopic(name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])
        ],
    )
    return int(client.request(request, 5).topics[0].partitions[0].offset)


def test_a_new_instance_aborts_the_old_ones_transaction_and_fences_it(client: RawClient) -> None:
    create_topics(client, "fence")
    pid, _, epoch = init(client, "fence-producer")
    assert add_partitions(client, "fence-producer", pid, epoch, "fence") is E.NONE
    assert produce(client, "fence", [b"zombie"], pid, epoch, 0, True, "fence-producer")[0] is E.NONE
    first = client.request(
        InitProducerIdRequest(transactional_id="fence-producer", transaction_timeout_ms=60000), 4
    )
    assert first.error_code == E.CONCURRENT_TRANSACTIONS  # the open transaction is aborted first
    new_pid, error, new_epoch = init(client, "fence-producer")
    assert (new_pid, error, new_epoch) == (pid, E.NONE, epoch + 2)
    # The zombie, still on its old epoch, can do nothing more.
    assert add_partitions(client, "fence-producer", pid, epoch, "fence") is E.PRODUCER_FENCED
    assert (
        add_partitions(client, "fence-producer", pid, epoch, "fence", version=1) is E.INVALID_PRODUCER_EPOCH
    )
    assert end_txn(client, "fence-producer", pid, epoch, committed=True) is E.PRODUCER_FENCED
    assert (
        produce(client, "fence", [b"late"], pid, epoch, 1, True, "fence-producer")[0]
        is E.INVALID_PRODUCER_EPOCH
    )
    fetched = read_committed(client, "fence")
    assert fetched.last_stable_offset == fetched.high_watermark == 2  # zombie + ABORT
    assert committed_values(fetched) == []


def test_a_timed_out_transaction_is_aborted_by_the_coordinator(client: RawClient) -> None:
    create_topics(client, "timeout")
    timeout_ms = 1000
    pid, _, epoch = init(client, "timeout-producer", timeout_ms=timeout_ms)
    assert add_partitions(client, "timeout-producer", pid, epoch, "timeout") is E.NONE
    started = time.monotonic()
    assert produce(client, "timeout", [b"abandoned"], pid, epoch, 0, True, "timeout-producer")[0] is E.NONE
    assert produce(client, "timeout", [b"later, plain"])[0] is E.NONE
    while read_committed(client, "timeout").last_stable_offset == 0:
        assert time.monotonic() - started < (timeout_ms + CLEANUP_MS) / 1000 + 2
        time.sleep(0.05)
    assert time.monotonic() - started >= timeout_ms / 1000
    fetched = read_committed(client, "timeout")
    assert committed_values(fetched) == [b"later, plain"]
    # The abort bumped the epoch: the producer is fenced.
    assert end_txn(client, "timeout-producer", pid, epoch, committed=True) is E.PRODUCER_FENCED


@pytest.mark.parametrize("crash", [False, True])
def test_coordinator_state_is_replayed_after_a_restart(tmp_path: Path, crash: bool) -> None:
    broker = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        with RawClient(broker.port) as client:
            create_topics(client, "replayed")
            pid, _, epoch = init(client, "replayed-producer")
            assert add_partitions(client, "replayed-producer", pid, epoch, "replayed") is E.NONE
            assert (
                produce(client, "replayed", [b"done"], pid, epoch, 0, True, "replayed-producer")[0] is E.NONE
            )
            assert end_txn(client, "replayed-producer", pid, epoch, committed=True) is E.NONE
            assert add_partitions(client, "replayed-producer", pid, epoch, "replayed") is E.NONE
            assert (
                produce(client, "replayed", [b"open"], pid, epoch, 1, True, "replayed-producer")[0] is E.NONE
            )
        if crash:
            broker.kill()
            broker.start()
        else:
            broker.restart()
        with RawClient(broker.port) as client:
            # The open transaction survived: still pinning the LSO, and still the producer's.
            deadline = time.monotonic() + 10
            while (fetched := read_committed(client, "replayed")).error_code != E.NONE:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert (fetched.high_watermark, fetched.last_stable_offset) == (3, 2)
            assert end_txn(client, "replayed-producer", pid, epoch, committed=True) is E.NONE
            fetched = read_committed(client, "replayed")
            assert fetched.last_stable_offset == fetched.high_watermark == 4
            assert committed_values(fetched) == [b"done", b"open"]
            assert init(client, "replayed-producer") == (pid, E.NONE, epoch + 1)
    finally:
        broker.stop()


def test_describe_list_and_describe_producers(client: RawClient) -> None:
    create_topics(client, "described")
    pid, _, epoch = init(client, "described-producer", timeout_ms=30000)
    assert add_partitions(client, "described-producer", pid, epoch, "described") is E.NONE
    assert produce(client, "described", [b"x"], pid, epoch, 0, True, "described-producer")[0] is E.NONE

    described = client.request(
        DescribeTransactionsRequest(transactional_ids=["described-producer", "nope"]), 0
    )
    found, missing = described.transaction_states
    assert (found.error_code, found.transaction_state, found.producer_id, found.producer_epoch) == (
        E.NONE,
        "Ongoing",
        pid,
        epoch,
    )
    assert found.transaction_timeout_ms == 30000 and found.transaction_start_time_ms > 0
    assert [(t.topic, t.partitions) for t in found.topics] == [("described", [0])]
    assert missing.error_code == E.TRANSACTIONAL_ID_NOT_FOUND

    listed = client.request(
        ListTransactionsRequest(state_filters=["Ongoing", "Bogus"], producer_id_filters=[]), 1
    )
    assert listed.error_code == E.NONE and listed.unknown_state_filters == ["Bogus"]
    assert ("described-producer", pid, "Ongoing") in [
        (t.transactional_id, t.producer_id, t.transaction_state) for t in listed.transaction_states
    ]
    by_pattern = client.request(
        ListTransactionsRequest(state_filters=[], producer_id_filters=[], transactional_id_pattern="desc.*"),
        2,
    )
    assert [t.transactional_id for t in by_pattern.transaction_states] == ["described-producer"]

    producers = client.request(
        DescribeProducersRequest(topics=[DescribeProducersTopic(name="described", partition_indexes=[0])]), 0
    )
    partition = producers.topics[0].partitions[0]
    assert [
        (p.producer_id, p.producer_epoch, p.current_txn_start_offset) for p in partition.active_producers
    ] == [(pid, epoch, 0)]
    assert end_txn(client, "described-producer", pid, epoch, committed=False) is E.NONE
    after = client.request(DescribeTransactionsRequest(transactional_ids=["described-producer"]), 0)
    assert after.transaction_states[0].transaction_state == "CompleteAbort"
