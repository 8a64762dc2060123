"""odradek's two-phase-commit producer on secured listeners: a transaction prepared over SASL_SSL in one
OS process and committed over SASL_SSL from another (SCRAM and PLAIN), over mutual TLS, and refusals
(a wrong password, an untrusted broker certificate) reported at once instead of retried to a timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.main import main as odradek
from odradek.client.security import ClientSecurityError, client_security
from odradek.client.two_phase_commit import (
    PreparedTransaction,
    TwoPhaseProducer,
    committed_offset,
    finish,
    open_transactions,
)
from odradek.protocol.error_codes import ErrorCode
from tests.support.broker_process import REPO
from tests.support.security import PLAIN_USERS, SCRAM_USERS, SecureBroker, start_secure_broker
from tests.support.txn_reader import read_committed_values

pytestmark = pytest.mark.timeout(180)

PREPARE = """
import json, sys
from odradek.cli.main import main as odradek
from odradek.client.security import client_security
from odradek.client.two_phase_commit import OffsetMarker, TwoPhaseProducer

bootstrap, txn_id, topic, settings = sys.argv[1:5]
security = client_security(json.loads(settings))
with TwoPhaseProducer(bootstrap, txn_id, security=security) as producer:
    producer.begin()
    for i in range(100):
        producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
    prepared = producer.prepare(OffsetMarker(f"marker-{txn_id}", "batches", 0, 5))
print(prepared.producer_id, prepared.producer_epoch)
"""


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    secure = start_secure_broker(
        tmp_path_factory.mktemp("twopc-secure"),
        {
            "transaction.two.phase.commit.enable": "true",
            "transaction.state.log.num.partitions": "3",
            "num.partitions": "3",
        },
    )
    try:
        yield secure
    finally:
        secure.process.stop()


def sasl_ssl(broker: SecureBroker, mechanism: str, password: str | None = None) -> dict[str, str]:
    """librdkafka's settings (what the Spark sink hands the client after translating Java's)."""
    users = SCRAM_USERS if mechanism.startswith("SCRAM") else PLAIN_USERS
    user, secret = next(iter(users.items()))
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": mechanism,
        "sasl.username": user,
        "sasl.password": password or secret,
        "ssl.ca.location": str(broker.certificates.ca_file),
    }


def mutual_tls(broker: SecureBroker) -> dict[str, str]:
    return {
        "security.protocol": "SSL",
        "ssl.ca.location": str(broker.certificates.ca_file),
        "ssl.certificate.location": str(broker.certificates.client_cert),
        "ssl.key.location": str(broker.certificates.client_key),
    }


def prepare_in_another_process(
    bootstrap: str, txn_id: str, topic: str, settings: dict[str, str]
) -> PreparedTransaction:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PREPARE), bootstrap, txn_id, topic, json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    pid, epoch = done.stdout.split()
    return PreparedTransaction(txn_id, int(pid), int(epoch))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_a_transaction_prepared_over_sasl_ssl_is_committed_over_sasl_ssl_from_another_process(
    broker: SecureBroker, mechanism: str
) -> None:
    bootstrap = broker.bootstrap("SASL_SSL")
    settings = sasl_ssl(broker, mechanism)
    topic, txn_id = f"secure-{mechanism.lower()}", f"secure-sink-{mechanism.lower()}-0"
    prepared = prepare_in_another_process(bootstrap, txn_id, topic, settings)
    security = client_security(settings)
    assert txn_id in open_transactions(bootstrap, security=security)
    plaintext = broker.bootstrap("PLAINTEXT")
    assert read_committed_values(plaintext, topic, 3) == {0: [], 1: [], 2: []}  # prepared, not committed
    assert finish(bootstrap, txn_id, True, expected=prepared, security=security) == prepared
    values = read_committed_values(plaintext, topic, 3)
    assert sorted(v for part in values.values() for v in part) == sorted(f"v{i}".encode() for i in range(100))
    assert committed_offset(bootstrap, f"marker-{txn_id}", "batches", 0, security=security) == 5
    assert txn_id not in open_transactions(bootstrap, security=security)


def test_a_transaction_prepared_and_aborted_over_mutual_tls(broker: SecureBroker) -> None:
    bootstrap, security = broker.bootstrap("MTLS"), client_security(mutual_tls(broker))
    with TwoPhaseProducer(bootstrap, "secure-mtls-0", security=security) as producer:
        producer.begin()
        producer.send("secure-mtls", b"never")
        prepared = producer.prepare()
    assert finish(bootstrap, "secure-mtls-0", False, expected=prepared, security=security) == prepared
    assert read_committed_values(broker.bootstrap("PLAINTEXT"), "secure-mtls", 3) == {0: [], 1: [], 2: []}


def test_a_wrong_password_is_refused_at_once_with_kafkas_error(broker: SecureBroker) -> None:
    security = client_security(sasl_ssl(broker, "SCRAM-SHA-512", password="not-the-password"))
    started = time.monotonic()
    with (
        pytest.raises(ClientSecurityError, match="SCRAM-SHA-512 login as carol refused") as refused,
        TwoPhaseProducer(broker.bootstrap("SASL_SSL"), "secure-denied-0", security=security) as producer,
    ):
        producer.begin()
    assert refused.value.kafka_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert time.monotonic() - started < 20, "a refused login must not be retried until the timeout"


def test_a_broker_certificate_from_an_untrusted_ca_is_refused_at_once(broker: SecureBroker) -> None:
    import trustme

    other = broker.certificates.directory / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    security = client_security({**sasl_ssl(broker, "PLAIN"), "ssl.ca.location": str(other)})
    started = time.monotonic()
    with pytest.raises(ClientSecurityError, match="CERTIFICATE_VERIFY_FAILED"):
        finish(broker.bootstrap("SASL_SSL"), "secure-untrusted-0", True, security=security)
    assert time.monotonic() - started < 20


def test_force_terminate_from_the_command_line_over_sasl_ssl(
    broker: SecureBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`odradek transactions force-terminate --command-config` finds the coordinator on the SASL_SSL
    listener and aborts a transaction prepared over it."""
    bootstrap, settings = broker.bootstrap("SASL_SSL"), sasl_ssl(broker, "SCRAM-SHA-256")
    prepare_in_another_process(bootstrap, "secure-cli-0", "secure-cli", settings)
    properties = tmp_path / "client.properties"
    properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    command = ["transactions", "force-terminate", "--transactional-id", "secure-cli-0"]
    assert odradek([*command, "--bootstrap-server", bootstrap, "--command-config", str(properties)]) == 0
    said = capsys.readouterr().out
    assert said.startswith("aborted the open transaction of secure-cli-0 on "), said
    assert "secure-cli-0,secure-cli-1,secure-cli-2;" in said  # and the marker's __consumer_offsets
    assert "secure-cli-0" not in open_transactions(bootstrap, security=client_security(settings))
    assert read_committed_values(broker.bootstrap("PLAINTEXT"), "secure-cli", 3) == {0: [], 1: [], 2: []}
