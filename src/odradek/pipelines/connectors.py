"""Which Spark connector the pipeline reads and writes its topics with.

- `odradek` (the default): odradek's own Python source and sink (`odradek.spark`), nothing to install
  beyond pip; its sink can write exactly once (two-phase-commit transactions).
- `kafka`: Spark's own connector (`spark-sql-kafka-0-10`, Apache Kafka's Java client inside), whose
  jars Spark must have: given as `spark.jars` (`connector_jars`), or already on Spark's class path. Its
  sink writes at least once; Spark offers no transactional Kafka sink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from odradek.pipelines.errors import PipelineError

ODRADEK = "odradek"
KAFKA = "kafka"
CONNECTORS = (ODRADEK, KAFKA)
#: Spark's `kafka` data source: on the driver's class path exactly when the connector's jars are.
KAFKA_PROVIDER_CLASS = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
#: librdkafka's names for settings the Java client spells otherwise: the Java client would ignore them
#: with a warning (and connect without them), so they are refused with `kafka`, naming the Java one.
_LIBRDKAFKA_ONLY = {
    "sasl.mechanisms": "sasl.mechanism",
    "sasl.username": "sasl.jaas.config",
    "sasl.password": "sasl.jaas.config",
    "ssl.ca.location": "ssl.truststore.location (with ssl.truststore.type=PEM)",
    "ssl.ca.pem": "ssl.truststore.certificates",
    "ssl.certificate.location": "ssl.keystore.location (with ssl.keystore.type=PEM)",
    "ssl.key.location": "ssl.keystore.location (with ssl.keystore.type=PEM)",
    "ssl.certificate.pem": "ssl.keystore.certificate.chain",
    "ssl.key.pem": "ssl.keystore.key",
}


def check_connector(connector: str, exactly_once: bool) -> None:
    """Refuses an unknown connector, and exactly-once writes with Spark's sink (it has no such mode)."""
    if connector not in CONNECTORS:
        raise ValueError(f"unknown connector '{connector}': use {' or '.join(CONNECTORS)}")
    if connector == KAFKA and exactly_once:
        raise ValueError(
            "Spark's kafka sink writes at least once: exactly-once delivery needs the odradek connector"
        )


def java_client_settings(client_settings: Mapping[str, str]) -> dict[str, str]:
    """The settings as Spark's connector passes them to the Java client; librdkafka-only names refused."""
    for name, java_name in _LIBRDKAFKA_ONLY.items():
        if name in client_settings:
            raise ValueError(
                f"'{name}' is librdkafka's name, which Spark's kafka connector (the Java client) does not "
                f"know: use {java_name}"
            )
    return dict(client_settings)


def checked_jars(jars: Sequence[str]) -> list[str]:
    """`connector_jars` as absolute paths, each an existing file (Spark would only warn of a missing one
    and fail later, at the first read, without naming it)."""
    checked = []
    for jar in jars:
        path = Path(jar).expanduser()
        if not path.is_file():
            raise ValueError(f"connector jar {jar} is not a file")
        checked.append(str(path.resolve()))
    return checked


def require_kafka_connector(spark: Any, provider: str = KAFKA_PROVIDER_CLASS) -> None:
    """Stop with one line, before any query starts, when Spark has no `kafka` data source (`provider`)."""
    from py4j.protocol import Py4JJavaError

    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        loader.loadClass(provider)
    except Py4JJavaError:  # the JVM's ClassNotFoundException
        raise PipelineError(
            "Spark has no kafka data source: give --connector-jars with the spark-sql-kafka-0-10_2.13 jar "
            "and its dependencies (kafka-clients, commons-pool2, spark-token-provider-kafka-0-10)"
        ) from None
