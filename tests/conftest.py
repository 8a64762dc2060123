"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess

#: The longest-running modules, scheduled first under `--numprocesses N --dist loadfile` (make test: a
#: module's tests stay on one worker, so its module-scoped brokers and clusters start once), so that none
#: of them starts near the end of a run and keeps one worker busy while the others are idle.
LONGEST_FIRST = (
    "tests/spark/test_pipeline_exactly_once.py",
    "tests/spark/test_pipeline.py",
    "tests/compat/streams/",
    "tests/compat/connect/",
    "tests/faults/",
    "tests/integration/cluster/",
    "tests/integration/mixed/",
    "tests/compat/java/",
    "tests/compat/kafka_tools/",
    "tests/spark/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules go first (a stable sort: a module's tests keep their order)."""

    def rank(item: pytest.Item) -> int:
        ranks = (i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix))
        return next(ranks, len(LONGEST_FIRST))

    items.sort(key=rank)


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
