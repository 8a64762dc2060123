"""One SparkSession (local[2]) for the whole test session, and one broker per test module.

The session carries Spark's own Kafka connector (`spark.jars`, tests/support/spark_kafka_jars.py), so
that its tests share the session the `odradek` format's tests use: a second session would cost a second
JVM start. Where the connector cannot be had (no Maven), the session starts without it and only the
connector's tests fail, each saying why (`kafka_connector`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import spark_jvm, spark_kafka_jars
from tests.support.broker_process import BrokerProcess
from tests.support.requirements import require_module

pyspark = require_module("pyspark", allow_module_level=True)
require_module("pyarrow", allow_module_level=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from odradek.spark.session import local_spark

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.extraJavaOptions": spark_jvm.DRIVER_JAVA_OPTIONS,
    }
    try:
        conf["spark.jars"] = spark_kafka_jars.spark_jars_setting()
    except spark_kafka_jars.ConnectorUnavailable as error:
        _connector_unavailable.append(str(error))
    session = local_spark("odradek-tests", **conf)
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(autouse=True)
def _active_session(request: pytest.FixtureRequest) -> None:
    """Make the shared session the active one of the JVM thread this test's calls run on. Spark looks a
    Python data source (`odradek`) up in the calling thread's active session, and py4j serves a
    connection opened again (after a call a timeout or a failed worker broke) on a new JVM thread that
    has none: every later write in that worker failed DATA_SOURCE_NOT_FOUND."""
    if "spark" not in request.fixturenames and "kafka_connector" not in request.fixturenames:
        return
    session = request.getfixturevalue("spark")
    session._jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)  # type: ignore[attr-defined]


#: Why the session has no Kafka connector, when it has none.
_connector_unavailable: list[str] = []


@pytest.fixture
def kafka_connector(spark: object) -> object:
    """The shared session, which has Spark's own `kafka` format; fails the test saying why if not."""
    if _connector_unavailable:
        pytest.fail(_connector_unavailable[0], pytrace=False)
    return spark


@pytest.fixture(scope="module")
def spark_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose auto-created topics have three partitions."""
    process = BrokerProcess(tmp_path_factory.mktemp("spark") / "data", {"num.partitions": "3"}).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def checkpoint(tmp_path: Path) -> str:
    return str(tmp_path / "checkpoint")
