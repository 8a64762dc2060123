"""The broker shared by the interop tests of every client (each test uses its own topic names).

Auto-created topics get three partitions. Topics that need their own configs (LogAppendTime, a small
`max.message.bytes`) are made with CreateTopics: see tests/support/interop.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.broker_process import BrokerProcess
from tests.support.interop import INTEROP_PARTITIONS


@pytest.fixture(scope="session")
def interop_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    # One __consumer_offsets partition: these tests need a group coordinator, not fifty partitions of it.
    settings = {"num.partitions": str(INTEROP_PARTITIONS), "offsets.topic.num.partitions": "1"}
    process = BrokerProcess(tmp_path_factory.mktemp("interop") / "data", settings).start()
    try:
        yield process
    finally:
        process.stop()
