"""A broker holding topics, messages and a lagging consumer group; a console on it; a headless Chromium.

Seeded data (module `seed`): `orders` (3 partitions, retention.ms set, JSON values with headers),
`events` (1 partition: text, a binary value, a null key), and the group `billing`, which committed
offsets part-way into `orders` and stopped: it lags, and it is Empty so its offsets can be reset.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.support import ConsoleProcess, chromium
from tests.support.broker_process import BrokerProcess
from tests.support.requirements import require_module

ORDERS_PARTITIONS = 3
ORDERS_PER_PARTITION = 20
BILLING_CONSUMED_PER_PARTITION = 5
RETENTION_MS = "604800000"


@pytest.fixture(scope="module")
def console_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    settings = {"offsets.topic.num.partitions": "1"}
    process = BrokerProcess(tmp_path_factory.mktemp("console") / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def admin(console_broker: BrokerProcess) -> Any:
    require_module("confluent_kafka")
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": console_broker.bootstrap})


@pytest.fixture(scope="module")
def seeded(console_broker: BrokerProcess, admin: Any) -> BrokerProcess:
    from tests.console.seed import seed

    seed(console_broker.bootstrap, admin)
    return console_broker


@pytest.fixture(scope="module")
def active_group(seeded: BrokerProcess) -> Iterator[str]:
    """The group `shipping`: one consumer of `events` that stays in the group while the tests run."""
    from tests.console.seed import consuming

    with consuming(seeded.bootstrap, "shipping", "events"):
        yield "shipping"


@pytest.fixture(scope="module")
def console(seeded: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleProcess]:
    process = ConsoleProcess(seeded.bootstrap, log_dir=tmp_path_factory.mktemp("console-log")).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path
