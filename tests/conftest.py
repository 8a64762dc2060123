"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_process import BrokerProcess


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
