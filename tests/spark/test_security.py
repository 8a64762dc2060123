"""The source and sink against secured listeners (SASL_SSL with SCRAM-SHA-512, SSL), with Spark's Java-style
option names (`kafka.sasl.jaas.config`, `kafka.ssl.truststore.location`, ...), and a refused password."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.client.two_phase_commit import committed_offset, open_transactions
from odradek.spark.exactly_once import MARKER_TOPIC
from odradek.spark.security import SecurityConfigError, librdkafka_security, parse_jaas_login
from tests.spark.kafka_helpers import consume_all, produce
from tests.support.java_stores import key_store, trust_store
from tests.support.security import SCRAM_USERS, SecureBroker, start_secure_broker
from tests.support.spark_jvm import pipeline_environment
from tests.support.txn_reader import read_committed_values

SCRAM_JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{}" password="{}";'


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    # Two-phase commit on: the sink's exactly-once mode, and the pipeline's by default.
    extra = {"num.partitions": "3", "transaction.two.phase.commit.enable": "true"}
    broker = start_secure_broker(tmp_path_factory.mktemp("spark-security"), extra)
    try:
        yield broker
    finally:
        broker.process.stop()


def sasl_ssl_options(broker: SecureBroker, password: str | None = None) -> dict[str, str]:
    user, secret = next(iter(SCRAM_USERS.items()))
    return {
        "kafka.bootstrap.servers": broker.bootstrap("SASL_SSL"),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": SCRAM_JAAS.format(user, password or secret),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(broker.certificates.ca_file),
    }


def ssl_options(broker: SecureBroker, listener: str = "SSL") -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": broker.bootstrap(listener),
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(broker.certificates.ca_file),
        "kafka.ssl.keystore.type": "PEM",
        "kafka.ssl.keystore.location": str(broker.certificates.client_keystore),
    }


def read_values(spark: Any, topic: str, options: dict[str, str]) -> list[str]:
    frame = spark.read.format("odradek").options(**options).option("subscribe", topic).load()
    return sorted(r.value.decode() for r in frame.select("value").collect())


def test_java_names_translate_to_librdkafka() -> None:
    config = librdkafka_security(
        {
            "bootstrap.servers": "b:1",
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "scram-sha-256",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required\n"
            '  username="u" password="p\\"w;d";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/ca.pem",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/client.pem",
            "ssl.key.password": "k",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert config == {
        "bootstrap.servers": "b:1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": "u",
        "sasl.password": 'p"w;d',
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/client.pem",
        "ssl.key.location": "/client.pem",
        "ssl.key.password": "k",
        "ssl.endpoint.identification.algorithm": "none",
    }
    assert parse_jaas_login(
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=alice password=s;", "PLAIN"
    ) == ("alice", "s")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sasl.mechanism": "GSSAPI"}, "GSSAPI and OAUTHBEARER are not supported"),
        ({"ssl.truststore.type": "JKS", "ssl.truststore.location": "/t.jks"}, "set ssl.truststore.password"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12"}, "set ssl.keystore.password"),
        ({"ssl.truststore.location": "/etc/kafka/client.truststore.jks"}, "a JKS store: set ssl.truststore"),
        (
            {
                "ssl.truststore.type": "JKS",
                "ssl.truststore.location": "/t.jks",
                "ssl.truststore.password": "p",
            },
            "JKS store cannot be read: No such file",
        ),
        ({"ssl.keystore.type": "BCFKS", "ssl.keystore.location": "/k.bcfks"}, "use JKS, PKCS12 or PEM"),
        ({"sasl.kerberos.service.name": "kafka"}, "Kerberos"),
        ({"security.protocol": "SASL_KERBEROS"}, "Unsupported security.protocol"),
        (
            {
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;",
            },
            "Krb5LoginModule in sasl.jaas.config is not supported",
        ),
        (
            {
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": SCRAM_JAAS.format("u", "p"),
            },
            "does not serve sasl.mechanism PLAIN",
        ),
    ],
)
def test_unsupported_settings_are_refused_clearly(params: dict[str, str], message: str) -> None:
    with pytest.raises(SecurityConfigError, match=message):
        librdkafka_security(params)


def test_batch_read_over_sasl_ssl_scram_sha_512(spark: Any, secure_broker: SecureBroker) -> None:
    produce(secure_broker.bootstrap("PLAINTEXT"), "sec-read", 300)
    assert read_values(spark, "sec-read", sasl_ssl_options(secure_broker)) == sorted(
        f"v{i}" for i in range(300)
    )


def test_batch_read_over_ssl_with_a_client_certificate(spark: Any, secure_broker: SecureBroker) -> None:
    produce(secure_broker.bootstrap("PLAINTEXT"), "sec-read-ssl", 120)
    # MTLS requires the client certificate: the keystore option is honoured, not just accepted.
    assert read_values(spark, "sec-read-ssl", ssl_options(secure_broker, "MTLS")) == sorted(
        f"v{i}" for i in range(120)
    )


@pytest.mark.parametrize("store_type", ["JKS", "PKCS12"])
def test_batch_read_over_mutual_tls_with_keytool_stores(
    spark: Any, secure_broker: SecureBroker, tmp_path: Path, store_type: str
) -> None:
    certificates = secure_broker.certificates
    client = certificates.ca.issue_cert("client@example.com", common_name="client-app")
    topic = f"sec-read-{store_type.lower()}"
    produce(secure_broker.bootstrap("PLAINTEXT"), topic, 50)
    options = {
        "kafka.bootstrap.servers": secure_broker.bootstrap("MTLS"),
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": store_type,
        "kafka.ssl.truststore.location": str(
            trust_store(certificates.ca, tmp_path / "t", store_type, "trust-pw")
        ),
        "kafka.ssl.truststore.password": "trust-pw",
        "kafka.ssl.keystore.type": store_type,
        "kafka.ssl.keystore.location": str(key_store(client, tmp_path / "k", store_type, "store-pw")),
        "kafka.ssl.keystore.password": "store-pw",
    }
    assert read_values(spark, topic, options) == sorted(f"v{i}" for i in range(50))


@pytest.mark.parametrize("listener", ["SASL_SSL", "SSL"])
def test_sink_over_secured_listeners(spark: Any, secure_broker: SecureBroker, listener: str) -> None:
    topic = f"sec-write-{listener.lower()}"
    options = sasl_ssl_options(secure_broker) if listener == "SASL_SSL" else ssl_options(secure_broker)
    frame = spark.range(200).selectExpr("cast(id AS string) AS key", "concat('w', id) AS value")
    frame.write.format("odradek").options(**options).option("topic", topic).mode("append").save()
    landed = consume_all(secure_broker.bootstrap("PLAINTEXT"), topic)
    assert sorted((m.value or b"").decode() for m in landed) == sorted(f"w{i}" for i in range(200))


@pytest.mark.parametrize("listener", ["SASL_SSL", "SSL"])
def test_exactly_once_sink_over_secured_listeners(
    spark: Any, secure_broker: SecureBroker, listener: str
) -> None:
    """The two-phase-commit client connects as the at-least-once producer does (Java option names):
    every row once for read_committed readers, no transaction left open, the batch marker committed."""
    topic, prefix = f"sec-eos-{listener.lower()}", f"sec-eos-query-{listener.lower()}"
    options = (
        sasl_ssl_options(secure_broker) if listener == "SASL_SSL" else ssl_options(secure_broker, "MTLS")
    )
    frame = spark.range(300).selectExpr("concat('k', id) AS key", "concat('e', id) AS value").repartition(3)
    (
        frame.write.format("odradek")
        .options(**options)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("transactionalIdPrefix", prefix)
        .option("batchId", "0")
        .mode("append")
        .save()
    )
    plaintext = secure_broker.bootstrap("PLAINTEXT")
    values = read_committed_values(plaintext, topic, 3)
    assert sorted(v for part in values.values() for v in part) == sorted(f"e{i}".encode() for i in range(300))
    assert not [t for t in open_transactions(plaintext) if t.startswith(prefix)]
    assert [committed_offset(plaintext, prefix, MARKER_TOPIC, p) for p in range(3)] == [1, 1, 1]


def test_exactly_once_sink_with_a_wrong_password_fails_fast(spark: Any, secure_broker: SecureBroker) -> None:
    options = sasl_ssl_options(secure_broker, password="not-the-password")
    frame = spark.range(3).selectExpr("concat('x', id) AS value")
    started = time.monotonic()
    with pytest.raises(Exception, match="login as carol refused"):
        (
            frame.write.format("odradek")
            .options(**options)
            .option("topic", "sec-eos-denied")
            .option("exactlyOnce", "true")
            .option("transactionalIdPrefix", "sec-eos-denied-query")
            .mode("append")
            .save()
        )
    assert time.monotonic() - started < 60, "the refusal must not wait out a timeout"


def test_wrong_password_fails_fast_with_a_clear_error(spark: Any, secure_broker: SecureBroker) -> None:
    produce(secure_broker.bootstrap("PLAINTEXT"), "sec-denied", 10)
    options = sasl_ssl_options(secure_broker, password="not-the-password")
    started = time.monotonic()
    with pytest.raises(Exception, match="Authentication to Kafka failed") as caught:
        read_values(spark, "sec-denied", options)
    assert "Invalid user credentials" in str(caught.value) or "authentication" in str(caught.value).lower()
    frame = spark.range(3).selectExpr("concat('x', id) AS value")
    with pytest.raises(Exception, match="Authentication to Kafka failed"):
        frame.write.format("odradek").options(**options).option("topic", "sec-denied").mode("append").save()
    assert time.monotonic() - started < 30, "the refusal must not wait out a timeout"


def write_client_properties(path: Path, broker: SecureBroker, password: str | None = None) -> Path:
    """A Kafka tool's client.properties, Java names, as a person would write it for SASL_SSL."""
    options = sasl_ssl_options(broker, password)
    path.write_text(
        "".join(
            f"{key[len('kafka.') :]}={value}\n"
            for key, value in options.items()
            if key != "kafka.bootstrap.servers"
        )
    )
    return path


def run_pipeline_command(
    tmp_path: Path, *arguments: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "odradek.cli.main", "pipeline", *arguments],
        cwd=tmp_path,
        env=pipeline_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_pipeline_runs_against_a_sasl_ssl_listener(secure_broker: SecureBroker, tmp_path: Path) -> None:
    """`odradek pipeline --command-config client.properties` end to end on SASL_SSL (SCRAM-SHA-512): every
    page view is counted in the Parquet output and in the output topic, which it wrote through the sink
    in its exactly-once mode (the default, on secured listeners too)."""
    import pyarrow.parquet as pq

    events = 600
    properties = write_client_properties(tmp_path / "client.properties", secure_broker)
    completed = run_pipeline_command(
        tmp_path,
        *("--bootstrap-server", secure_broker.bootstrap("SASL_SSL"), "--command-config", str(properties)),
        *("--events", str(events), "--rate", "0", "--trigger", "available-now"),
        *("--input-topic", "sec-views", "--output-topic", "sec-stats", "--output-dir", str(tmp_path / "out")),
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "exactly once (two-phase-commit transactions" in completed.stdout + completed.stderr
    rows = pq.read_table(tmp_path / "out").to_pylist()
    assert rows and sum(r["value"] for r in rows if r["metric"] == "views_per_page") == events
    messages = [
        json.loads(m.value or b"") for m in consume_all(secure_broker.bootstrap("PLAINTEXT"), "sec-stats")
    ]
    assert len(messages) == len(rows)
    assert sum(m["value"] for m in messages if m["metric"] == "views_per_page") == events


def test_pipeline_with_a_wrong_password_stops_with_a_clear_error(
    secure_broker: SecureBroker, tmp_path: Path
) -> None:
    properties = write_client_properties(tmp_path / "client.properties", secure_broker, "wrong-password")
    started = time.monotonic()
    completed = run_pipeline_command(
        tmp_path,
        *("--bootstrap-server", secure_broker.bootstrap("SASL_SSL"), "--command-config", str(properties)),
        *("--events", "10", "--trigger", "available-now", "--output-dir", str(tmp_path / "out")),
        timeout=120,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "Authentication failed" in completed.stderr and "Traceback" not in completed.stderr
    assert time.monotonic() - started < 60


def test_pipeline_refuses_a_jks_truststore_without_password_before_starting(tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/t.jks\n")
    completed = run_pipeline_command(
        tmp_path, "--bootstrap-server", "127.0.0.1:1", "--command-config", str(properties), timeout=60
    )
    assert completed.returncode == 2
    assert "ssl.truststore.location is a JKS store: set ssl.truststore.password" in completed.stderr
