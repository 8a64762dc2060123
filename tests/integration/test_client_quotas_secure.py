"""Client quotas with authentication: `odradek quotas` over SSL, SASL_PLAINTEXT and SASL_SSL (PLAIN and
SCRAM) from --command-config, AlterClientQuotas refused without AlterConfigs on the cluster, and a user
quota applied to the SASL principal of a confluent-kafka producer."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.cli.main import main as odradek
from tests.support.acls import start_acl_broker
from tests.support.requirements import require_module
from tests.support.security import SecureBroker, start_secure_broker

pytestmark = pytest.mark.timeout(180)

RATE = 100 * 1024


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureBroker]:
    broker = start_secure_broker(tmp_path, {"quota.window.num": "2", "quota.window.size.seconds": "1"})
    try:
        yield broker
    finally:
        broker.process.stop()


def _settings(path: Path, **settings: str) -> str:
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return str(path)


def _quotas(bootstrap: str, config: str, *args: str) -> int:
    return odradek(["quotas", *args, "--bootstrap-server", bootstrap, "--command-config", config])


def test_quotas_over_every_security_protocol(
    secure: SecureBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = str(secure.certificates.ca_file)
    scram = _settings(
        tmp_path / "scram.properties",
        **{
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": ca,
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "carol",
            "sasl.password": "carol-secret",
        },
    )
    plain = _settings(
        tmp_path / "plain.properties",
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        },
    )
    mtls = _settings(
        tmp_path / "mtls.properties",
        **{
            "security.protocol": "SSL",
            "ssl.ca.location": ca,
            "ssl.certificate.location": str(secure.certificates.client_cert),
            "ssl.key.location": str(secure.certificates.client_key),
        },
    )
    assert (
        _quotas(
            secure.bootstrap("SASL_SSL"),
            scram,
            "alter",
            "--user",
            "carol",
            "--add-config",
            "request_percentage=80",
        )
        == 0
    )
    for listener, config in (("SASL_PLAINTEXT", plain), ("MTLS", mtls), ("SASL_SSL", scram)):
        capsys.readouterr()
        assert _quotas(secure.bootstrap(listener), config, "describe") == 0, listener
        assert "user=carol  request_percentage  80" in capsys.readouterr().out, listener
    wrong = _settings(
        tmp_path / "wrong.properties",
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "carol",
            "sasl.password": "not-carols",
        },
    )
    capsys.readouterr()
    assert _quotas(secure.bootstrap("SASL_PLAINTEXT"), wrong, "describe") == 1
    assert "SASL_AUTHENTICATION_FAILED" in capsys.readouterr().err


def test_a_user_quota_holds_the_sasl_principals_producer(secure: SecureBroker, tmp_path: Path) -> None:
    require_module("confluent_kafka")
    from confluent_kafka import Producer

    admin = _settings(
        tmp_path / "admin.properties",
        **{
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        },
    )
    assert (
        _quotas(
            secure.bootstrap("SASL_PLAINTEXT"),
            admin,
            "alter",
            "--user",
            "carol",
            "--add-config",
            f"producer_byte_rate={RATE}",
        )
        == 0
    )
    throttles: list[float] = []
    producer = Producer(
        {
            "bootstrap.servers": secure.bootstrap("SASL_SSL"),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(secure.certificates.ca_file),
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "carol",
            "sasl.password": "carol-secret",
            "linger.ms": 5,
            "batch.size": 16 * 1024,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    topic = f"quota-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    for _ in range(400):
        while True:
            try:
                producer.produce(topic, b"v" * 1000)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0
    rate = 400 * 1000 / (time.monotonic() - started)
    producer.poll(0)
    assert throttles and max(throttles) > 0
    assert rate < 1.6 * RATE, f"{rate:.0f} B/s against carol's quota of {RATE} B/s"


def test_altering_quotas_needs_alter_configs_on_the_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broker, port = start_acl_broker(tmp_path / "data")
    try:
        bootstrap = f"127.0.0.1:{port}"

        def as_user(user: str) -> str:
            return _settings(
                tmp_path / f"{user}.properties",
                **{
                    "security.protocol": "SASL_PLAINTEXT",
                    "sasl.mechanism": "PLAIN",
                    "sasl.username": user,
                    "sasl.password": f"{user}-secret",
                },
            )

        assert (
            _quotas(
                bootstrap, as_user("alice"), "alter", "--user", "bob", "--add-config", "producer_byte_rate=10"
            )
            == 1
        )
        assert "CLUSTER_AUTHORIZATION_FAILED" in capsys.readouterr().err
        assert _quotas(bootstrap, as_user("alice"), "describe") == 1
        assert "CLUSTER_AUTHORIZATION_FAILED" in capsys.readouterr().err
        assert (
            _quotas(
                bootstrap, as_user("admin"), "alter", "--user", "bob", "--add-config", "producer_byte_rate=10"
            )
            == 0
        )
    finally:
        broker.stop()
