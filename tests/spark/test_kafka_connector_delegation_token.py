"""Spark's own Kafka connector logging in to odradek with a delegation token (KIP-48): the token's id
and HMAC in `kafka.sasl.jaas.config` with `tokenauth="true"` (ScramLoginModule), read and written batch
and streaming over SASL_PLAINTEXT, as the token's owner. (The `odradek` source and sink log in with the
same options: tests/spark/test_delegation_token.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from tests.spark.kafka_helpers import copy_batch_and_streaming
from tests.support.delegation_tokens import create_token, scram_login, token_password
from tests.support.raw_client import RawClient
from tests.support.security import SCRAM_USERS, SecureBroker, start_secure_broker

TOKEN_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="{}" password="{}" tokenauth="true";'
)


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    broker = start_secure_broker(
        tmp_path_factory.mktemp("spark-connector-token"),
        {"num.partitions": "3", "delegation.token.secret.key": "spark-token-secret"},
    )
    try:
        yield broker
    finally:
        broker.process.stop()


@pytest.fixture(scope="module")
def token_options(secure_broker: SecureBroker) -> dict[str, str]:
    user, password = next(iter(SCRAM_USERS.items()))
    with RawClient(secure_broker.ports["SASL_PLAINTEXT"]) as client:
        assert scram_login(client, "SCRAM-SHA-512", user, password).error_code == 0
        created: Any = create_token(client)
    assert created.error_code == ErrorCode.NONE, created
    return {
        "kafka.bootstrap.servers": secure_broker.bootstrap("SASL_PLAINTEXT"),
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": TOKEN_JAAS.format(created.token_id, token_password(created.hmac)),
    }


def test_a_token_reads_and_writes_batch_and_streaming(
    kafka_connector: Any, secure_broker: SecureBroker, token_options: dict[str, str], checkpoint: str
) -> None:
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    copy_batch_and_streaming(kafka_connector, token_options, plaintext, "token", checkpoint)
