"""A transactional producer of each client fails at once, with a fatal error naming the refusal, when
it initialises against odradek (which has no transaction coordinator yet). Before, the broker answered
the retriable COORDINATOR_NOT_AVAILABLE and every client retried until its own timeout."""

from __future__ import annotations

import asyncio
import time

import aiokafka
import aiokafka.errors
import kafka
import kafka.errors
import pytest
from confluent_kafka import KafkaException, Producer

from tests.support.broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(60)

#: Well under every client's own timeout below (each would otherwise retry for that long).
FAILS_WITHIN_S = 3.0
CLIENT_TIMEOUT_S = 20


def test_confluent_init_transactions_fails_at_once_with_a_fatal_error(interop_broker: BrokerProcess) -> None:
    producer = Producer(
        {"bootstrap.servers": interop_broker.bootstrap, "transactional.id": "refused-confluent"}
    )
    started = time.monotonic()
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(CLIENT_TIMEOUT_S)
    error = raised.value.args[0]
    assert time.monotonic() - started < FAILS_WITHIN_S
    assert error.fatal() and not error.retriable()
    assert error.name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    assert "transactions are not supported by this broker" in error.str()


def test_kafka_python_init_transactions_fails_at_once(interop_broker: BrokerProcess) -> None:
    producer = kafka.KafkaProducer(
        bootstrap_servers=interop_broker.bootstrap,
        transactional_id="refused-kafka-python",
        max_block_ms=CLIENT_TIMEOUT_S * 1000,
    )
    try:
        started = time.monotonic()
        with pytest.raises(kafka.errors.TransactionalIdAuthorizationFailedError):
            producer.init_transactions()
        assert time.monotonic() - started < FAILS_WITHIN_S
    finally:
        producer.close(timeout=5)


def test_aiokafka_transactional_producer_start_fails_at_once(interop_broker: BrokerProcess) -> None:
    async def start() -> float:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=interop_broker.bootstrap, transactional_id="refused-aiokafka"
        )
        started = time.monotonic()
        try:
            with pytest.raises(aiokafka.errors.TransactionalIdAuthorizationFailed):
                await asyncio.wait_for(producer.start(), CLIENT_TIMEOUT_S)
            return time.monotonic() - started
        finally:
            await producer.stop()

    assert asyncio.run(start()) < FAILS_WITHIN_S
