"""Fixtures of the group integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.groups.raw_groups import RAW_GROUP_OVERRIDES
from tests.support.broker_process import BrokerProcess


@pytest.fixture
def group_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of its own (tests restart and kill it), with short group timeouts."""
    process = BrokerProcess(tmp_path / "data", {**RAW_GROUP_OVERRIDES, "num.partitions": "6"}).start()
    try:
        yield process
    finally:
        process.stop()
