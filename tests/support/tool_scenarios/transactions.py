"""kafka-transactions: list, describe, describe-producers, find-hanging and abort, on a transaction a
producer (confluent-kafka, librdkafka) leaves open; then what a read_committed console consumer sees."""

from __future__ import annotations

import contextlib
from typing import Any

from confluent_kafka import KafkaException, Producer

from tests.support.tool_scenarios.session import Session, columns, scenario
from tests.support.tool_scenarios.topics import create

B = "--bootstrap-server"
TOPIC = "tools-txn"
TRANSACTIONAL_ID = "tools-txn-1"


def open_transaction(session: Session, values: list[str]) -> Any:
    """A transactional producer that has written `values` to partition 0 and not ended its transaction."""
    producer = Producer(
        {
            "bootstrap.servers": session.bootstrap,
            "transactional.id": TRANSACTIONAL_ID,
            "transaction.timeout.ms": 600000,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for value in values:
        producer.produce(TOPIC, value=value.encode(), partition=0)
    producer.flush(60)
    return producer


def _ids(text: str) -> str:
    """Producer ids, coordinators and durations differ from run to run and broker to broker."""
    return columns(
        text,
        ProducerId="<producer-id>",
        Coordinator="<node>",
        CoordinatorId="<node>",
        TransactionDurationMs="<duration>",
        LastTimestamp="<timestamp>",
        LatestCoordinatorEpoch="<epoch>",
        CoordinatorEpoch="<epoch>",
        **{"Duration(min)": "<minutes>"},
    )


@scenario()
def transactions(session: Session) -> None:
    create(session, TOPIC, 2, record=False)
    session.quiet(
        "kafka-console-producer",
        B,
        "{bootstrap}",
        "--topic",
        TOPIC,
        "--property",
        "parse.key=true",
        "--property",
        "key.separator=:",
        stdin="a:before-1\na:before-2\n",
    )  # fmt: skip  (key "a" goes to partition 0 of 2 with murmur2)
    producer = open_transaction(session, ["open-1", "open-2"])
    try:
        transactions_tool = ("kafka-transactions", B, "{bootstrap}")
        session.run(*transactions_tool, "list", shown=_ids, sort=True)
        session.run(*transactions_tool, "describe", "--transactional-id", TRANSACTIONAL_ID, shown=_ids)
        session.run(*transactions_tool, "describe", "--transactional-id", "tools-txn-missing")
        session.run(
            *transactions_tool, "describe-producers", "--topic", TOPIC, "--partition", "0", shown=_sorted_ids
        )
        # (describe-producers of a partition that does not exist: the admin client looks for its leader
        # until its default.api.timeout.ms, against Kafka too; left out)
        session.run(*transactions_tool, "find-hanging", "--broker-id", "1", shown=_ids)
        session.run(
            *transactions_tool, "find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0", shown=_ids
        )
        session.run(*transactions_tool, "find-hanging")
        session.run(
            "kafka-console-consumer",
            B,
            "{bootstrap}",
            "--topic",
            TOPIC,
            "--partition",
            "0",
            "--offset",
            "0",
            "--isolation-level",
            "read_committed",
            "--timeout-ms",
            "3000",
        )  # fmt: skip  (the open transaction holds back what follows it)
        session.run(*transactions_tool, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "5")
        session.run(*transactions_tool, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "2")
        session.run(
            *transactions_tool, "describe-producers", "--topic", TOPIC, "--partition", "0", shown=_sorted_ids
        )
        session.run(
            "kafka-console-consumer", B, "{bootstrap}", "--topic", TOPIC, "--partition", "0", "--offset", "0",
            "--isolation-level", "read_committed", "--max-messages", "2", "--timeout-ms", "20000",
        )  # fmt: skip
    finally:
        with contextlib.suppress(KafkaException):  # the tool's abort may have ended it already
            producer.abort_transaction(60)


def _sorted_ids(text: str) -> str:
    lines = _ids(text).splitlines()
    return "\n".join(lines[:1] + sorted(lines[1:]))
