"""Spark's own Kafka connector against a SASL listener of odradek: SCRAM-SHA-512 over SASL_PLAINTEXT, the
login given as Spark users give it (`kafka.sasl.jaas.config`), read and written batch and streaming;
a wrong password fails the query with the Java client's authentication error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark.kafka_helpers import consume_all, produce
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
    produce(plaintext, "secured-in", 6)
    options = scram_options(secure_broker)

    frame = kafka_connector.read.format("kafka").options(**options).option("subscribe", "secured-in").load()
    assert sorted((r.partition, r.offset, r.key, r.value) for r in frame.collect()) == sorted(
        (i % 3, i // 3, b"k%d" % i, b"v%d" % i) for i in range(6)
    )

    frame.selectExpr("key", "value", "partition").write.format("kafka").options(**options).option(
        "topic", "secured-batch-copy"
    ).save()
    stream = (
        kafka_connector.readStream.format("kafka")
        .options(**options)
        .option("subscribe", "secured-in")
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "value", "partition")
    )
    query = (
        stream.writeStream.format("kafka")
        .options(**options)
        .option("topic", "secured-stream-copy")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    for copy in ("secured-batch-copy", "secured-stream-copy"):
        got = [(m.partition, m.offset, m.key, m.value) for m in consume_all(plaintext, copy)]
        assert got == sorted((i % 3, i // 3, b"k%d" % i, b"v%d" % i) for i in range(6)), copy


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
