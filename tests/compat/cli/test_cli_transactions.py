"""`odradek transactions` against a real broker: a confluent-kafka producer left inside a transaction is
listed and described, then its hanging transaction is aborted from the command line, which releases a
read_committed reader at once (long before the transaction's timeout)."""

from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.compat.cli.cli_support import odradek, table_rows
from tests.support.broker_process import BrokerProcess
from tests.support.txn_reader import read_committed_values


def test_list_describe_and_abort_a_hanging_transaction(cli_broker: BrokerProcess) -> None:
    bootstrap = cli_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: its futures die with it
    admin.create_topics([NewTopic("cli-txn", 1, 1)])["cli-txn"].result(20)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "cli-hanging", "transaction.timeout.ms": 600000}
    )
    producer.init_transactions(20)
    producer.begin_transaction()
    producer.produce("cli-txn", value=b"hanging", partition=0)
    producer.flush(20)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce("cli-txn", value=b"after", partition=0)
    plain.flush(20)
    assert read_committed_values(bootstrap, "cli-txn", 1)[0] == []  # held back by the open transaction

    listed = odradek("transactions", "list", "--state", "Ongoing", bootstrap=bootstrap)
    assert listed.code == 0, listed.stderr
    rows = table_rows(listed.stdout, "TransactionalId")
    assert [r["TransactionState"] for r in rows if r["TransactionalId"] == "cli-hanging"] == ["Ongoing"]

    described = odradek("transactions", "describe", "--transactional-id", "cli-hanging", bootstrap=bootstrap)
    assert described.code == 0, described.stderr
    [row] = table_rows(described.stdout, "TransactionalId")
    assert (row["TransactionState"], row["TransactionTimeoutMs"], row["TopicPartitions"]) == (
        "Ongoing",
        "600000",
        "cli-txn-0",
    )

    missing = odradek("transactions", "describe", "--transactional-id", "nobody", bootstrap=bootstrap)
    assert missing.code != 0 and "does not exist" in missing.stderr

    wrong = odradek(
        "transactions",
        "abort",
        "--topic",
        "cli-txn",
        "--partition",
        "0",
        "--start-offset",
        "1",
        bootstrap=bootstrap,
    )
    assert wrong.code != 0 and "no open transaction starts at offset 1" in wrong.stderr
    aborted = odradek(
        "transactions",
        "abort",
        "--topic",
        "cli-txn",
        "--partition",
        "0",
        "--start-offset",
        "0",
        bootstrap=bootstrap,
    )
    assert aborted.code == 0, aborted.stderr
    assert read_committed_values(bootstrap, "cli-txn", 1)[0] == [b"after"]
