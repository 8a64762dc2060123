"""A broker whose TLS listeners use JKS or PKCS12 key and trust stores made with keytool, as Kafka
users configure them: kafka-python and confluent-kafka produce and consume over TLS, and over mutual TLS
where the client certificate is checked against the JKS/PKCS12 trust store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.security import SecureBroker, start_secure_broker
from tests.support.security_clients import Access, confluent_round_trip, kafka_python_round_trip

pytestmark = pytest.mark.timeout(180)
VALUES = [b"first", b"second"]


@pytest.fixture(scope="module", params=["JKS", "PKCS12"])
def store_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecureBroker]:
    directory: Path = tmp_path_factory.mktemp(f"stores-{request.param}")
    broker = start_secure_broker(directory, store_type=request.param)
    try:
        yield broker
    finally:
        broker.process.stop()


def test_kafka_python_round_trip_over_a_listener_with_a_keytool_key_store(store_broker: SecureBroker) -> None:
    assert kafka_python_round_trip(store_broker, Access("SSL", "SSL"), "kp-ssl", VALUES) == VALUES


def test_confluent_round_trip_over_a_listener_with_a_keytool_key_store(store_broker: SecureBroker) -> None:
    assert confluent_round_trip(store_broker, Access("SSL", "SSL"), "ck-ssl", VALUES) == VALUES


def test_mutual_tls_checks_client_certificates_against_a_keytool_trust_store(
    store_broker: SecureBroker,
) -> None:
    access = Access("MTLS", "SSL", client_certificate=True)
    assert kafka_python_round_trip(store_broker, access, "kp-mtls", VALUES) == VALUES
    assert confluent_round_trip(store_broker, access, "ck-mtls", VALUES) == VALUES
