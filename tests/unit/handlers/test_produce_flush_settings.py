"""flush.messages and flush.ms, the topic settings that trade throughput for an fsync: a produce that
brings a log to flush.messages unflushed records is fsynced before it is acknowledged (Kafka's
UnifiedLog.append), and a log whose last flush is flush.ms old is flushed by the periodic job
(LogManager.flushDirtyLogs). Real before, but no test said so."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.storage.config import LogConfig
from odradek.storage.log_manager import LogManager
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.fetching import produce
from tests.unit.storage.helpers import FakeClock, batch

pytestmark = pytest.mark.timeout(30)


async def test_a_produce_reaching_flush_messages_is_fsynced_before_its_answer(
    handler_broker: HandlerBroker,
) -> None:
    await handler_broker.create_topic("every", configs={"flush.messages": "1"})
    await handler_broker.create_topic("third", configs={"flush.messages": "3"})
    await handler_broker.create_topic("default")
    await produce(handler_broker, "every", 0, b"a", b"b")
    assert handler_broker.log("every").recovery_point == 2
    await produce(handler_broker, "third", 0, b"a", b"b")
    assert handler_broker.log("third").recovery_point == 0
    await produce(handler_broker, "third", 0, b"c")
    assert handler_broker.log("third").recovery_point == 3
    await produce(handler_broker, "default", 0, b"a")
    assert handler_broker.log("default").recovery_point == 0  # left to the OS, as Kafka's default


def test_a_log_whose_last_flush_is_flush_ms_old_is_flushed_by_the_periodic_job(tmp_path: Path) -> None:
    clock = FakeClock()
    manager = LogManager([tmp_path], LogConfig(), clock=clock)
    manager.startup()
    try:
        log = manager.get_or_create_log("timed", 0, config=LogConfig(flush_ms=1000))
        log.append(batch([b"a"]))
        assert manager.flushes.prepare_flushes() == []
        clock.advance(1000)
        jobs = manager.flushes.prepare_flushes()
        assert [flushed for flushed, _ in jobs] == [log]
        for _, job in jobs:
            job.run()
        manager.flushes.complete_flushes(jobs)
        assert log.recovery_point == 1
    finally:
        manager.shutdown()
