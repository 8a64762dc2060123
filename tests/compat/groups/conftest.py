"""A broker with short group timeouts shared by the group compat tests (each test uses its own names)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.compat.groups.group_clients import GROUP_BROKER_OVERRIDES
from tests.support.broker_process import BrokerProcess


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path_factory.mktemp("groups") / "data", GROUP_BROKER_OVERRIDES).start()
    try:
        yield process
    finally:
        process.stop()
