"""One broker for the CLI tests (each test uses its own topic and group names), tuned for quick groups."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.broker_process import BrokerProcess

CLI_BROKER_OVERRIDES = {
    "num.partitions": "1",
    "offsets.topic.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
}


@pytest.fixture(scope="session")
def cli_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("cli") / "data", CLI_BROKER_OVERRIDES).start()
    try:
        yield process
    finally:
        process.stop()
