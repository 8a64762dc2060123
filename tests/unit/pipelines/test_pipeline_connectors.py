"""The pipeline's choice of Spark connector: odradek's source and sink, or Spark's own `kafka`; what
cannot be honoured with the one chosen is refused when the settings are made, not when Spark runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.pipelines import JobSettings
from odradek.pipelines.checkpoint import CheckpointMismatch, StreamIdentity, claim_checkpoint
from odradek.pipelines.connectors import checked_jars, java_client_settings

THIS = StreamIdentity("cluster-a", "page-views", "topic-1")


def settings(**changes: object) -> JobSettings:
    fields: dict[str, object] = {
        "bootstrap": "127.0.0.1:9092",
        "input_topic": "in",
        "output_topic": "out",
        "output_dir": "/tmp/out",
        "checkpoint_dir": "/tmp/checkpoint",
        **changes,
    }
    return JobSettings(**fields)  # type: ignore[arg-type]


def test_job_settings_refuse_an_unknown_connector_and_exactly_once_on_sparks_kafka_sink() -> None:
    with pytest.raises(ValueError, match="unknown connector 'kafka-0-8': use odradek or kafka"):
        settings(connector="kafka-0-8")
    with pytest.raises(ValueError, match="exactly-once delivery needs the odradek connector"):
        settings(connector="kafka", exactly_once=True)
    assert settings(connector="kafka").connector == "kafka"
    assert settings(exactly_once=True).connector == "odradek"


def test_sparks_connector_takes_java_names_and_refuses_librdkafka_only_ones() -> None:
    java = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/ca.pem",
    }
    assert java_client_settings(java) == java
    with pytest.raises(
        ValueError, match=r"'ssl\.ca\.location' is librdkafka's name.*use ssl\.truststore\.location"
    ):
        java_client_settings({"ssl.ca.location": "/ca.pem"})
    with pytest.raises(ValueError, match=r"'sasl\.password' is librdkafka's name"):
        settings(connector="kafka", client_settings={"sasl.password": "p"})


def test_connector_jars_must_be_files_and_are_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.jar").write_bytes(b"PK")
    monkeypatch.chdir(tmp_path)
    assert checked_jars(["a.jar"]) == [str(tmp_path / "a.jar")]
    with pytest.raises(ValueError, match=r"connector jar b\.jar is not a file"):
        checked_jars(["a.jar", "b.jar"])


def test_a_checkpoint_is_resumed_only_through_the_connector_that_wrote_it(tmp_path: Path) -> None:
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    assert claim_checkpoint(checkpoint, output, THIS, run_owns_checkpoint=False, connector="kafka") == "new"
    (checkpoint / "page_stats").mkdir()
    assert (
        claim_checkpoint(checkpoint, output, THIS, run_owns_checkpoint=False, connector="kafka") == "resumed"
    )
    with pytest.raises(CheckpointMismatch, match="written through the kafka connector, not odradek"):
        claim_checkpoint(checkpoint, output, THIS, run_owns_checkpoint=False, connector="odradek")
