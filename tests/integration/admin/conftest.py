"""A broker for the raw admin-protocol tests of this folder, shared by each test module.

It runs with three partitions per topic by default and a static log.retention.hours (to see synonyms
and sources).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.admin.wire import Wire
from tests.support.broker_process import BrokerProcess

DEFAULT_PARTITIONS = 3
STATIC_RETENTION_HOURS = 24
OVERRIDES = {
    "num.partitions": str(DEFAULT_PARTITIONS),
    "log.retention.hours": str(STATIC_RETENTION_HOURS),
}


@pytest.fixture(scope="module")
def admin_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("admin") / "data", OVERRIDES).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def wire(admin_broker: BrokerProcess) -> Iterator[Wire]:
    with Wire(admin_broker.bootstrap) as connection:
        yield connection
