"""Fixtures shared by the cluster unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from odradek.storage.stray_logs import JudgedByLeaderAndIsr


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[LogManager]:
    """A cluster member's log manager (no single-node topic store) on a fresh directory, at the default
    log config; a module needing other settings defines its own `logs`."""
    manager = LogManager([tmp_path / "logs"], LogConfig.from_mapping({}), strays=JudgedByLeaderAndIsr())
    manager.startup()
    try:
        yield manager
    finally:
        manager.shutdown()
