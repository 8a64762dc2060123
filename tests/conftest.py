"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess

#: Folders whose modules must share one pytest-xdist worker: the Spark tests share one session-wide
#: SparkSession (a JVM each worker would otherwise start again).
_ONE_WORKER_FOLDERS = ("tests/spark/",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `-n N --dist loadgroup` (make test), a module's tests stay on one worker, so its module-scoped
    brokers and clusters start once; the folders above go to one worker together."""
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = next((folder for folder in _ONE_WORKER_FOLDERS if path.startswith(folder)), path)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A fresh single-node broker on a free loopback port, stopped after the test."""
    process = BrokerProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for a whole test module (tests must use their own topic names)."""
    process = BrokerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield process
    finally:
        process.stop()
