"""Creating `__consumer_offsets`: off the event loop, invisible until durable, created once, and retried
in the background by FindCoordinator (COORDINATOR_NOT_AVAILABLE meanwhile) after a failed attempt."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from odradek.coordinator.settings import OFFSETS_TOPIC
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.heartbeat import HeartbeatRequest
from odradek.storage.errors import LogStorageError
from tests.support.fsync_gate import FsyncGate
from tests.unit.coordinator.harness import Harness

pytestmark = pytest.mark.timeout(60)


def test_offsets_topic_is_created_once_off_the_loop_and_invisible_until_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        h = Harness(tmp_path, **{"offsets.topic.num.partitions": "50"})
        creations = _count_creations(h, monkeypatch)
        gate = FsyncGate(hold_marker=f"/{OFFSETS_TOPIC}-", hold_seconds=10)
        monkeypatch.setattr(os, "fsync", gate)
        try:
            starting = asyncio.ensure_future(h.start())
            assert await asyncio.to_thread(gate.holding.wait, 20), "the creation never fsynced"
            # Held in an fsync of the worker thread: the loop runs this test meanwhile.
            assert h.topics.is_being_created(OFFSETS_TOPIC)
            assert h.cluster.topic(OFFSETS_TOPIC) is None and h.logs.get_log(OFFSETS_TOPIC, 0) is None
            assert h.coordinator.coordinator_node("g") is None  # FindCoordinator: COORDINATOR_NOT_AVAILABLE
            heartbeat = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
            assert h.coordinator.heartbeat(heartbeat) is ErrorCode.COORDINATOR_NOT_AVAILABLE
            concurrent = asyncio.ensure_future(h.coordinator.ensure_offsets_topic())
            gate.release()
            await starting
            assert await concurrent
        finally:
            gate.release()
        try:
            assert creations == [OFFSETS_TOPIC]
            assert [call.path for call in gate.calls if call.on_main_thread] == []
            topic = h.cluster.topic(OFFSETS_TOPIC)
            assert topic is not None and len(topic.partitions) == 50 and topic.is_internal
            assert h.coordinator.coordinator_node("g") == 1
        finally:
            h.stop()

    asyncio.run(main())


def test_failed_offsets_topic_creation_is_retried_by_find_coordinator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        h = Harness(tmp_path, **{"offsets.topic.num.partitions": "3"})
        real = h.topics.create_topic
        attempts: list[str] = []

        async def failing_once(name: str, *args: Any, **kwargs: Any) -> Any:
            attempts.append(name)
            if len(attempts) == 1:
                raise LogStorageError("disk full")
            return await real(name, *args, **kwargs)

        monkeypatch.setattr(h.topics, "create_topic", failing_once)
        try:
            await h.start()
            assert h.cluster.topic(OFFSETS_TOPIC) is None
            assert h.coordinator.coordinator_node("g") is None  # starts a new attempt in the background
            assert h.coordinator.coordinator_node("g") is None  # ... only one
            for _ in range(500):
                if h.cluster.topic(OFFSETS_TOPIC) is not None:
                    break
                await asyncio.sleep(0.01)
            assert attempts == [OFFSETS_TOPIC, OFFSETS_TOPIC]
            assert h.coordinator.coordinator_node("g") == 1
        finally:
            h.stop()

    asyncio.run(main())


def _count_creations(h: Harness, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names TopicAdmin actually creates (validation passed, files made)."""
    created: list[str] = []
    real = h.logs.complete_partitions

    def counting(job: Any) -> Any:
        created.append(job.topic)
        return real(job)

    monkeypatch.setattr(h.logs, "complete_partitions", counting)
    return created
