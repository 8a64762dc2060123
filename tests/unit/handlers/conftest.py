"""Handler-level tests: handlers called in-process on real storage in tmp_path (support/handler_services.py).

Tests here may be `async def`: each runs in its own event loop (`asyncio.run`), which the waits of the
handlers (fetch long-polls, topic creation in a worker thread) need.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.handler_services import HandlerBroker


@pytest.fixture
def handler_broker(tmp_path: Path) -> Iterator[HandlerBroker]:
    broker = HandlerBroker(tmp_path / "data")
    try:
        yield broker
    finally:
        broker.close()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an `async def` test to completion in a new event loop (no plugin needed for so little)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    asyncio.run(pyfuncitem.obj(**arguments))
    return True


@pytest.fixture
def cluster_member(tmp_path: Path) -> Iterator[HandlerBroker]:
    """Broker 2 of a ZooKeeper cluster (tests/unit/handlers/cluster_member.py), no ZooKeeper needed."""
    broker = HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True)
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture
def replicated_member(tmp_path: Path) -> Iterator[HandlerBroker]:
    """Broker 2 of that cluster whose high watermark follows its followers' fetches (replication)."""
    broker = HandlerBroker(tmp_path / "member", node_id=2, zookeeper_mode=True, replicated=True)
    try:
        yield broker
    finally:
        broker.close()
