"""A broker whose TLS listeners use JKS or PKCS12 key and trust stores made with keytool, as Kafka
users configure them: kafka-python and confluent-kafka produce and consume over TLS, and over mutual TLS
where the client certificate is checked against the JKS/PKCS12 trust store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compat.cli.cli_support import odradek
from tests.support.java_stores import key_store, trust_store
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


def _run_cli(broker: SecureBroker, properties: Path, *command: str) -> None:
    result = odradek(*command, "--command-config", str(properties), bootstrap=broker.bootstrap("MTLS"))
    assert result.code == 0, result.stderr


@pytest.mark.parametrize("client_type", ["JKS", "PKCS12"])
def test_cli_command_config_with_java_stores_over_mutual_tls(
    store_broker: SecureBroker, tmp_path: Path, client_type: str
) -> None:
    certificates = store_broker.certificates
    client = certificates.ca.issue_cert("client@example.com", common_name="client-app")
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SSL\n"
        f"ssl.truststore.type={client_type}\n"
        f"ssl.truststore.location={trust_store(certificates.ca, tmp_path / 't', client_type, 'trust-pw')}\n"
        "ssl.truststore.password=trust-pw\n"
        f"ssl.keystore.type={client_type}\n"
        f"ssl.keystore.location={key_store(client, tmp_path / 'k', client_type, 'store-pw')}\n"
        "ssl.keystore.password=store-pw\n"
    )
    _run_cli(store_broker, properties, "topics", "list")  # confluent-kafka
    _run_cli(store_broker, properties, "users", "list")  # the protocol spoken by odradek itself


def test_cli_librdkafka_pkcs12_key_store_over_mutual_tls(store_broker: SecureBroker, tmp_path: Path) -> None:
    certificates = store_broker.certificates
    client = certificates.ca.issue_cert("client@example.com", common_name="client-app")
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SSL\n"
        f"ssl.ca.location={certificates.ca_file}\n"
        f"ssl.keystore.location={key_store(client, tmp_path / 'k.p12', 'PKCS12', 'store-pw')}\n"
        "ssl.keystore.password=store-pw\n"
    )
    _run_cli(store_broker, properties, "topics", "list")
    _run_cli(store_broker, properties, "users", "list")


def test_cli_wrong_store_password_fails_in_one_line(store_broker: SecureBroker, tmp_path: Path) -> None:
    certificates = store_broker.certificates
    properties = tmp_path / "client.properties"
    properties.write_text(
        "security.protocol=SSL\nssl.truststore.type=JKS\n"
        f"ssl.truststore.location={trust_store(certificates.ca, tmp_path / 't', 'JKS', 'trust-pw')}\n"
        "ssl.truststore.password=wrong-pw\n"
    )
    result = odradek(
        "topics", "list", "--command-config", str(properties), bootstrap=store_broker.bootstrap("SSL")
    )
    assert result.code != 0
    assert "store password is wrong" in result.stderr and "wrong-pw" not in result.stderr
