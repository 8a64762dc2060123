"""Brokers shared by the interop tests of every client (each test uses its own topic names).

- `interop_broker`: default settings, three partitions per auto-created topic.
- `log_append_time_broker`: `log.message.timestamp.type=LogAppendTime`, so every topic's records get
  the broker's clock.
- `small_messages_broker`: `message.max.bytes=10000`, so a larger batch fails with MESSAGE_TOO_LARGE.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.interop import INTEROP_PARTITIONS, SMALL_MESSAGE_MAX_BYTES


def _serve(
    tmp_path_factory: pytest.TempPathFactory, name: str, overrides: dict[str, str]
) -> Iterator[BrokerProcess]:
    # One __consumer_offsets partition: these tests need a group coordinator, not fifty partitions of it.
    settings = {"offsets.topic.num.partitions": "1", **overrides}
    process = BrokerProcess(tmp_path_factory.mktemp(name) / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="session")
def interop_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from _serve(tmp_path_factory, "interop", {"num.partitions": str(INTEROP_PARTITIONS)})


@pytest.fixture(scope="session")
def log_append_time_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from _serve(tmp_path_factory, "append-time", {"log.message.timestamp.type": "LogAppendTime"})


@pytest.fixture(scope="session")
def small_messages_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from _serve(tmp_path_factory, "small-messages", {"message.max.bytes": str(SMALL_MESSAGE_MAX_BYTES)})
