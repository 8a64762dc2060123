"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess

#: The longest-running modules first, then the folders of slow ones, for `make test` (`--numprocesses N
#: --dist loadfile --no-loadscope-reorder`): a module's tests stay on one worker, so its module-scoped
#: brokers and clusters start once, and a worker takes the next module in this order when it is nearly
#: done, so the longest start at once and the short ones fill in at the end, when the workers finish
#: together. Without `--no-loadscope-reorder` xdist sorts the modules by their number of tests instead,
#: which put the slowest (one or two tests each, the exactly-once pipeline's 7 minutes among them) last.
#: The files are in the order of their durations in the last full run on the loaded 2-core machine.
LONGEST_FIRST = (
    "tests/spark/test_pipeline_exactly_once.py",
    "tests/spark/test_pipeline_command.py",
    "tests/compat/java/test_java_clients_cluster.py",  # before the third Spark module: less CPU at once
    "tests/spark/test_pipeline.py",
    "tests/spark/test_security.py",
    "tests/compat/connect/",
    "tests/integration/test_crash_recovery.py",
    "tests/faults/test_replication_acceptance.py",
    "tests/integration/mixed/test_mixed_load_java_and_librdkafka.py",
    "tests/integration/mixed/test_coordinators_moving_between_kinds.py",
    "tests/integration/mixed/test_rolling_replacement.py",
    "tests/integration/mixed/test_two_kafka_one_odradek.py",
    "tests/compat/kafka_tools/",
    "tests/compat/java/",
    "tests/compat/streams/",
    "tests/integration/mixed/",
    "tests/compat/groups/test_group_broker_restart.py",
    "tests/integration/cluster/",
    "tests/faults/",
    "tests/spark/",
    "tests/console/",
    "tests/compat/",
    "tests/integration/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slowest modules go first (a stable sort: a module's tests keep their order)."""

    def rank(item: pytest.Item) -> int:
        ranks = (i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix))
        return next(ranks, len(LONGEST_FIRST))

    items.sort(key=rank)


#: Seconds each module took, setups, calls and teardowns summed (under xdist, in the controller, from
#: every worker's reports): the measure LONGEST_FIRST is ordered by.
_module_seconds = Counter[str]()
SLOWEST_MODULES_SHOWN = 30


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _module_seconds[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """With --durations (as make test asks), the slowest modules too: a module is what a worker takes."""
    if not config.getoption("durations") or not _module_seconds:
        return
    slowest = _module_seconds.most_common(SLOWEST_MODULES_SHOWN)
    terminalreporter.write_sep("=", f"slowest {len(slowest)} modules (setups, calls, teardowns)")
    for module, seconds in slowest:
        terminalreporter.write_line(f"{seconds:8.2f}s {module}")


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
