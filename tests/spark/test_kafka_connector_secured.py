"""Spark's own Kafka connector against a SASL listener of odradek: SCRAM-SHA-512 over SASL_PLAINTEXT, the
login given as Spark users give it (`kafka.sasl.jaas.config`), read and written batch and streaming;
a wrong password fails the query with the Java client's authentication error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.kafka_helpers import copy_batch_and_streaming
from tests.support.security import SCRAM_USERS, SecureBroker, start_secure_broker

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{}" password="{}";'


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    broker = start_secure_broker(tmp_path_factory.mktemp("spark-connector-security"), {"num.partitions": "3"})
    try:
        yield broker
    finally:
        broker.process.stop()


def scram_options(broker: SecureBroker, password: str | None = None) -> dict[str, str]:
    user, secret = next(iter(SCRAM_USERS.items()))
    return {
        "kafka.bootstrap.servers": broker.bootstrap("SASL_PLAINTEXT"),
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": SCRAM_JAAS.format(user, password or secret),
    }


def test_scram_login_reads_and_writes_batch_and_streaming(
    kafka_connector: Any, secure_broker: SecureBroker, checkpoint: str
) -> None:
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    copy_batch_and_streaming(kafka_connector, scram_options(secure_broker), plaintext, "secured", checkpoint)


def test_a_wrong_scram_password_fails_the_read_with_an_authentication_error(
    kafka_connector: Any, secure_broker: SecureBroker
) -> None:
    options = {
        **scram_options(secure_broker, password="not-the-password"),
        "fetchOffset.numRetries": "1",
    }
    frame = kafka_connector.read.format("kafka").options(**options).option("subscribe", "secured-in").load()
    with pytest.raises(Exception, match=r"SaslAuthenticationException|Authentication failed"):
        frame.collect()
