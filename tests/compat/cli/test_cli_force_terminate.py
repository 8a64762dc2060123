"""`odradek transactions force-terminate` (kafka-transactions forceTerminateTransaction, KIP-939): a
prepared two-phase-commit transaction, which never times out, is aborted from the command line on every
partition it wrote, its writer fenced. `abort` (one partition's marker, as kafka-transactions abort)
leaves such a transaction open at its coordinator; force-terminate ends it there."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.client.two_phase_commit import TwoPhaseError, TwoPhaseProducer, finish, open_transactions
from odradek.protocol.error_codes import ErrorCode
from tests.compat.cli.cli_support import odradek, table_rows
from tests.support.broker_process import BrokerProcess
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    settings = {
        "num.partitions": "2",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "3",
        "transaction.two.phase.commit.enable": "true",
    }
    process = BrokerProcess(tmp_path_factory.mktemp("cli-2pc") / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


def _prepare(bootstrap: str, txn_id: str, topic: str) -> None:
    """A two-phase transaction prepared on both partitions of `topic`, then a plain record after it on
    each: read_committed readers are held back until the transaction ends."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(20)
    with TwoPhaseProducer(bootstrap, txn_id) as producer:
        producer.begin()
        for partition in (0, 1):
            producer.send(topic, b"prepared", partition=partition)
        producer.prepare()
    plain = Producer({"bootstrap.servers": bootstrap})
    for partition in (0, 1):
        plain.produce(topic, b"after", partition=partition)
    assert plain.flush(20) == 0
    assert read_committed_values(bootstrap, topic, 2) == {0: [], 1: []}


@pytest.mark.parametrize("command", ["force-terminate", "forceTerminateTransaction"])
def test_force_terminate_aborts_a_prepared_two_phase_transaction_on_every_partition(
    broker: BrokerProcess, command: str
) -> None:
    bootstrap = broker.bootstrap
    txn_id, topic = f"cli-2pc-{command.lower()}", f"cli-2pc-{command.lower()}"
    _prepare(bootstrap, txn_id, topic)

    ended = odradek("transactions", command, "--transactional-id", txn_id, bootstrap=bootstrap)
    assert ended.code == 0, ended.stderr
    assert ended.stdout.startswith(f"aborted the open transaction of {txn_id} on {topic}-0,{topic}-1;")
    assert read_committed_values(bootstrap, topic, 2) == {0: [b"after"], 1: [b"after"]}
    assert txn_id not in open_transactions(bootstrap)
    described = odradek("transactions", "describe", "--transactional-id", txn_id, bootstrap=bootstrap)
    [row] = table_rows(described.stdout, "TransactionalId")
    assert row["TransactionState"] == "Empty"
    # Its external coordinator finds nothing left to commit.
    assert finish(bootstrap, txn_id, True) is None


def test_abort_of_one_partition_leaves_a_prepared_transaction_open_at_its_coordinator(
    broker: BrokerProcess,
) -> None:
    """What `abort` does to a prepared two-phase transaction (as kafka-transactions abort): one
    partition's marker; the coordinator still holds the transaction, and the other partition stays held
    back until force-terminate ends it."""
    bootstrap, txn_id, topic = broker.bootstrap, "cli-2pc-partial", "cli-2pc-partial"
    _prepare(bootstrap, txn_id, topic)
    aborted = odradek(
        *("transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0"),
        bootstrap=bootstrap,
    )
    assert aborted.code == 0, aborted.stderr
    assert read_committed_values(bootstrap, topic, 2) == {0: [b"after"], 1: []}
    assert txn_id in open_transactions(bootstrap)
    ended = odradek("transactions", "force-terminate", "--transactional-id", txn_id, bootstrap=bootstrap)
    assert ended.code == 0, ended.stderr
    assert read_committed_values(bootstrap, topic, 2) == {0: [b"after"], 1: [b"after"]}


def test_force_terminate_fences_a_live_producer_without_a_transaction(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    with TwoPhaseProducer(bootstrap, "cli-2pc-idle") as producer:
        producer.begin()  # the id exists, no transaction open
        ended = odradek(
            "transactions", "force-terminate", "--transactional-id", "cli-2pc-idle", bootstrap=bootstrap
        )
        assert ended.code == 0, ended.stderr
        assert ended.stdout.startswith("cli-2pc-idle had no open transaction;")
        producer.send("cli-2pc-idle", b"late")
        with pytest.raises(TwoPhaseError) as fenced:
            producer.prepare()
    assert fenced.value.error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH)


def test_force_terminate_of_an_unknown_transactional_id_is_refused_and_creates_nothing(
    broker: BrokerProcess,
) -> None:
    refused = odradek(
        "transactions", "force-terminate", "--transactional-id", "nobody-2pc", bootstrap=broker.bootstrap
    )
    assert refused.code != 0
    assert "transactional id 'nobody-2pc' does not exist" in refused.stderr
    listed = odradek("transactions", "list", bootstrap=broker.bootstrap)
    assert "nobody-2pc" not in listed.stdout
