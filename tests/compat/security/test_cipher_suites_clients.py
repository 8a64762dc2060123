"""A TLS listener restricted by ``ssl.cipher.suites`` (TLS 1.2 only, one suite): kafka-python, Python's ssl
and kcat offering that suite connect, clients offering only other suites are refused in the handshake.
(kafka-python 3.0.12 given `ssl_ciphers` of only another suite still produced here, cause not looked
into, so a Python ssl client offers the other suites.)"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.requirements import require_executable
from tests.support.security import SecureBroker, start_secure_broker
from tests.support.security_clients import Access, kafka_python_round_trip, kcat

pytestmark = pytest.mark.timeout(120)
SUITE = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"  # trustme keys are ECDSA
OPENSSL_SUITE, OTHER = "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    directory: Path = tmp_path_factory.mktemp("ciphers")
    started = start_secure_broker(directory, {"ssl.enabled.protocols": "TLSv1.2", "ssl.cipher.suites": SUITE})
    try:
        yield started
    finally:
        started.process.stop()


def _negotiated(broker: SecureBroker, ciphers: str) -> str | None:
    """The suite a Python TLS client offering only `ciphers` gets from the SSL listener, or None."""
    context = ssl.create_default_context(cafile=str(broker.certificates.ca_file))
    context.set_ciphers(ciphers)
    try:
        with (
            socket.create_connection(("127.0.0.1", broker.ports["SSL"]), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            cipher = tls.cipher()
            return cipher[0] if cipher else None
    except (ssl.SSLError, OSError):
        return None


def test_only_the_listed_suite_is_negotiated(broker: SecureBroker) -> None:
    assert _negotiated(broker, f"{OTHER}:{OPENSSL_SUITE}") == OPENSSL_SUITE
    assert _negotiated(broker, OTHER) is None


def test_kafka_python_round_trip_over_the_restricted_listener(broker: SecureBroker) -> None:
    values = [b"one", b"two"]
    assert kafka_python_round_trip(broker, Access("SSL", "SSL"), "ciphers", values) == values


def test_kcat_offering_only_another_suite_is_refused(broker: SecureBroker) -> None:
    require_executable("kcat")
    access = Access("SSL", "SSL")
    assert kcat(broker, access, "-X", f"ssl.cipher.suites={OPENSSL_SUITE}", "-L", "-m", "5").returncode == 0
    assert kcat(broker, access, "-X", f"ssl.cipher.suites={OTHER}", "-L", "-m", "5").returncode != 0
