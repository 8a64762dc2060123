"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess

#: Tests using the session-wide SparkSession (the `spark` fixture) share one pytest-xdist worker, so
#: one JVM serves them all.
SPARK_SESSION_GROUP = "spark-session"
#: The longest-running modules and groups, scheduled first so that none of them starts near the end of a
#: run and keeps one worker busy while the others are idle (prefixes of test ids).
LONGEST_FIRST = (
    "tests/spark/test_pipeline_exactly_once.py",
    "tests/spark/test_pipeline.py",
    SPARK_SESSION_GROUP,
    "tests/faults/",
    "tests/integration/cluster/",
    "tests/spark/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under `--numprocesses N --dist loadgroup` (make test) a module's tests stay on one worker, so its
    module-scoped brokers and clusters start once; and the slowest groups go first."""
    groups: dict[str, str] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        group = SPARK_SESSION_GROUP if "spark" in getattr(item, "fixturenames", ()) else module
        groups[item.nodeid] = group
        item.add_marker(pytest.mark.xdist_group(group))

    def rank(item: pytest.Item) -> int:
        group = groups[item.nodeid]
        ranks = (i for i, prefix in enumerate(LONGEST_FIRST) if group.startswith(prefix))
        return next(ranks, len(LONGEST_FIRST))

    items.sort(key=rank)  # stable: a module's tests keep their order


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
