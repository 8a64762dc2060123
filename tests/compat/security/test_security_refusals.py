"""Wrong passwords, unknown users, unknown mechanisms, untrusted certificates and plaintext on a TLS
listener are refused, each client reporting Kafka's error; the broker meanwhile serves everyone else."""

from __future__ import annotations

import asyncio
import logging
import re
import time

import pytest
from confluent_kafka import KafkaError, Producer

from tests.support.requirements import require_executable
from tests.support.security import SCRAM_USERS, SecureBroker
from tests.support.security_clients import (
    Access,
    aiokafka_settings,
    kafka_python_settings,
    kcat,
    kcat_round_trip,
    librdkafka_settings,
)

pytestmark = pytest.mark.timeout(120)

WRONG_PLAIN = Access("SASL_PLAINTEXT", "SASL_PLAINTEXT", "PLAIN", "alice", "not-her-password")
UNKNOWN_PLAIN = Access("SASL_SSL", "SASL_SSL", "PLAIN", "mallory", "whatever")
WRONG_SCRAM = Access("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-256", "carol", "not-her-password")
UNKNOWN_SCRAM = Access("SASL_SSL", "SASL_SSL", "SCRAM-SHA-512", "mallory", "whatever")
PLAIN_FAILURE = "Authentication failed: Invalid username or password"
SCRAM_FAILURE = "Authentication failed: Invalid user credentials"
REFUSED = [
    (WRONG_PLAIN, PLAIN_FAILURE),
    (UNKNOWN_PLAIN, PLAIN_FAILURE),
    (WRONG_SCRAM, SCRAM_FAILURE),
    (UNKNOWN_SCRAM, SCRAM_FAILURE),
]
GOOD = Access("SASL_SSL", "SASL_SSL", "SCRAM-SHA-256", "carol", SCRAM_USERS["carol"])


def librdkafka_errors(settings: dict[str, str], seconds: float = 5) -> list[KafkaError]:
    """The errors a confluent-kafka producer reports while it tries to connect."""
    errors: list[KafkaError] = []
    producer = Producer({**settings, "error_cb": errors.append})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not any(e.code() != KafkaError._ALL_BROKERS_DOWN for e in errors):
        producer.poll(0.1)
    return errors


@pytest.mark.parametrize(("access", "message"), REFUSED, ids=lambda value: str(value)[:30])
def test_confluent_reports_the_sasl_authentication_failure(
    secure_broker: SecureBroker, access: Access, message: str
) -> None:
    errors = librdkafka_errors(librdkafka_settings(secure_broker, access))
    assert any(e.code() == KafkaError._AUTHENTICATION and message in e.str() for e in errors), errors
    _still_serves(secure_broker)


@pytest.mark.parametrize(("access", "message"), REFUSED, ids=lambda value: str(value)[:30])
def test_kcat_reports_the_sasl_authentication_failure(
    secure_broker: SecureBroker, access: Access, message: str
) -> None:
    require_executable("kcat")
    result = kcat(secure_broker, access, "-L", "-m", "3")
    assert result.returncode != 0
    assert f"SASL authentication error: {message}" in result.stderr.decode()


@pytest.mark.parametrize(("access", "message"), REFUSED, ids=lambda value: str(value)[:30])
def test_aiokafka_reports_the_sasl_authentication_failure(
    secure_broker: SecureBroker, access: Access, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def run() -> None:
        producer = AIOKafkaProducer(**aiokafka_settings(secure_broker, access))
        try:
            with pytest.raises(KafkaConnectionError):
                await producer.start()
        finally:
            await producer.stop()

    with caplog.at_level(logging.ERROR, logger="aiokafka"):
        asyncio.run(run())
    assert f"[Error 58] SaslAuthenticationFailed: {message}" in caplog.text


@pytest.mark.parametrize(("access", "message"), REFUSED[:3:2], ids=lambda value: str(value)[:30])
def test_kafka_python_is_refused(secure_broker: SecureBroker, access: Access, message: str) -> None:
    # kafka-python 3.0.12 reports only that it could not bootstrap: it never sees the broker's answer
    # (read by the raw tests in test_sasl_protocol.py). Its transport reads what the socket holds up to
    # the end of the stream and, on reaching the end, drops the bytes read with it: the answer and the
    # close that follows it (as Kafka's broker closes after a failed authentication) come together. It
    # takes the disconnection for a network error and tries again until bootstrap_timeout_ms (30 s by
    # default, which this test waited out); 5 s is ample for its first refused try. The broker logs the
    # reason.
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError as KafkaPythonError

    log = secure_broker.process.log_path
    before = log.read_text().count(f"({message})")
    with pytest.raises(KafkaPythonError):
        KafkaAdminClient(
            request_timeout_ms=2000, bootstrap_timeout_ms=5000, **kafka_python_settings(secure_broker, access)
        )
    assert log.read_text().count(f"({message})") > before
    _still_serves(secure_broker)


def test_unknown_mechanism_is_refused_naming_the_offered_ones(secure_broker: SecureBroker) -> None:
    require_executable("kcat")
    access = Access("SASL_PLAINTEXT", "SASL_PLAINTEXT", "SCRAM-SHA-1", "carol", "x")
    result = kcat(secure_broker, access, "-L", "-m", "3")
    assert result.returncode != 0
    assert (
        "SASL SCRAM-SHA-1 mechanism handshake failed: Broker: Unsupported SASL mechanism: broker's supported "
        "mechanisms: PLAIN,SCRAM-SHA-256,SCRAM-SHA-512" in result.stderr.decode()
    )


def test_untrusted_broker_certificate_is_refused_by_the_client(secure_broker: SecureBroker) -> None:
    errors = librdkafka_errors(librdkafka_settings(secure_broker, Access("SSL", "SSL", trust_ca=False)))
    # librdkafka reports the failed handshake as _SSL, or as _TRANSPORT when the socket's end is seen
    # first (a loaded machine); the reason is the same
    refused = (KafkaError._SSL, KafkaError._TRANSPORT)
    assert any(e.code() in refused and "certificate verify failed" in e.str() for e in errors), errors
    _still_serves(secure_broker)


def test_client_without_a_certificate_is_refused_where_one_is_required(secure_broker: SecureBroker) -> None:
    require_executable("kcat")
    result = kcat(secure_broker, Access("MTLS", "SSL"), "-L", "-m", "3")
    assert result.returncode != 0
    assert "SSL" in result.stderr.decode()
    _still_serves(secure_broker)


def test_plaintext_client_on_a_tls_listener_is_disconnected(secure_broker: SecureBroker) -> None:
    errors = librdkafka_errors(librdkafka_settings(secure_broker, Access("SSL", "PLAINTEXT")), seconds=3)
    assert errors and all(e.code() in (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN) for e in errors)
    assert "wrong version number" in secure_broker.process.log_path.read_text()
    _still_serves(secure_broker)


def test_certificate_no_mapping_rule_applies_to_is_refused(secure_broker: SecureBroker) -> None:
    # the MTLS listener's rules are RULE:^CN=([^,]*),.*$/$1/U only: a certificate without a CN has no name
    require_executable("kcat")
    certs = secure_broker.certificates
    nameless = certs.ca.issue_cert("nameless@example.com", organization_name="Example")
    key, cert = certs.directory / "nameless-key.pem", certs.directory / "nameless-cert.pem"
    nameless.private_key_pem.write_to_path(str(key))
    nameless.cert_chain_pems[0].write_to_path(str(cert))
    command = ("-X", f"ssl.certificate.location={cert}", "-X", f"ssl.key.location={key}", "-L", "-m", "3")
    result = kcat(secure_broker, Access("MTLS", "SSL"), *command)
    assert result.returncode != 0
    assert re.search(
        r"No rules apply to OU=Testing cert #[^,]*,O=Example", secure_broker.process.log_path.read_text()
    )
    good = kcat(secure_broker, Access("MTLS", "SSL", client_certificate=True), "-L", "-m", "5")
    assert good.returncode == 0, good.stderr.decode()


def _still_serves(broker: SecureBroker) -> None:
    values = [b"still here"]
    assert kcat_round_trip(broker, GOOD, f"healthy-{time.monotonic_ns()}", values) == values
