"""One SparkSession (local[2]) for the whole test session, and one broker per test module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.requirements import require_module

pyspark = require_module("pyspark", allow_module_level=True)
require_module("pyarrow", allow_module_level=True)


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from odradek.spark.session import local_spark

    session = local_spark("odradek-tests", **{"spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()


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
