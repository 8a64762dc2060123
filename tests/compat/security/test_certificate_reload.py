"""A TLS listener's key store changed with AlterConfigs (listener-prefixed, as Kafka's SslFactory
reconfigures): new connections get the new certificate, a store that cannot be loaded is refused with
nothing changed, and the change outlives a restart."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from tests.compat.cli.cli_support import odradek
from tests.support.requirements import require_executable
from tests.support.security import SecureBroker, start_secure_broker
from tests.support.security_clients import Access, kcat

pytestmark = pytest.mark.timeout(120)
KEYSTORE = "listener.name.ssl.ssl.keystore.location"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[SecureBroker]:
    require_executable("kcat")
    started = start_secure_broker(tmp_path)
    try:
        yield started
    finally:
        started.process.stop()


def _connects(broker: SecureBroker, listener: str, ca_file: Path) -> bool:
    result = kcat(
        broker, Access(listener, "SSL", trust_ca=False), "-X", f"ssl.ca.location={ca_file}", "-L", "-m", "5"
    )
    return result.returncode == 0


def _alter(broker: SecureBroker, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap("PLAINTEXT")})
    entry = ConfigEntry(KEYSTORE, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)


def test_new_key_store_serves_new_connections_and_survives_a_restart(
    broker: SecureBroker, tmp_path: Path
) -> None:
    old_ca = broker.certificates.ca_file
    new_ca = trustme.CA()
    new_ca_file, new_keystore = tmp_path / "new-ca.pem", tmp_path / "new-broker.pem"
    new_ca.cert_pem.write_to_path(str(new_ca_file))
    new_ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(
        str(new_keystore)
    )
    assert _connects(broker, "SSL", old_ca) and not _connects(broker, "SSL", new_ca_file)

    arguments = ("configs", "alter", "--entity-type", "brokers", "--entity-name", "1")
    altered = odradek(
        *arguments, "--add-config", f"{KEYSTORE}={new_keystore}", bootstrap=broker.bootstrap("PLAINTEXT")
    )
    assert altered.code == 0, altered.stderr
    assert _connects(broker, "SSL", new_ca_file)
    assert not _connects(broker, "SSL", old_ca)
    assert broker.process.log_path.read_text().count("TLS key and trust stores reloaded for SSL") == 1

    # an unrelated change re-reads nothing; the same path set again after the file was replaced does
    _alter_other(broker)
    assert broker.process.log_path.read_text().count("TLS key and trust stores reloaded") == 1
    third_ca = trustme.CA()
    third_ca_file = tmp_path / "third-ca.pem"
    third_ca.cert_pem.write_to_path(str(third_ca_file))
    replacement = tmp_path / "replacement.pem"
    third_ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(replacement))
    os.replace(replacement, new_keystore)
    _alter(broker, str(new_keystore))
    assert _connects(broker, "SSL", third_ca_file)
    new_ca_file = third_ca_file

    broker.process.restart()
    assert _connects(broker, "SSL", new_ca_file)


def _alter_other(broker: SecureBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap("PLAINTEXT")})
    entry = ConfigEntry("log.cleaner.backoff.ms", "20000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)


def test_key_store_that_cannot_be_loaded_is_refused_and_nothing_changes(
    broker: SecureBroker, tmp_path: Path
) -> None:
    with pytest.raises(KafkaException) as caught:
        _alter(broker, str(tmp_path / "missing.pem"))
    error = caught.value.args[0]
    assert error.name() == "INVALID_CONFIG"
    assert f"{KEYSTORE}: the key and certificate cannot be loaded" in error.str()
    assert _connects(broker, "SSL", broker.certificates.ca_file)
