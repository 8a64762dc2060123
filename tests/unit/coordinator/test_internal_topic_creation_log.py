"""An internal topic that cannot be created yet (fewer live brokers than its replication factor) was
logged at WARNING on every try, and every FindCoordinator tries: a Java admin client retrying for a
minute wrote 132,000 lines (15 MB). Said once a minute now, the tries between at DEBUG."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from odradek.cluster.internal_topics import ZkInternalTopics
from tests.unit.coordinator.harness import Harness


def test_a_topic_short_of_brokers_is_warned_about_once_a_minute_not_at_every_try(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    harness = Harness(tmp_path)
    runtime = harness.coordinator.runtime
    in_a_cluster = ZkInternalTopics(harness.topics, harness.cluster)
    now = [1000.0]
    monkeypatch.setattr("odradek.coordinator.runtime.time.monotonic", lambda: now[0])

    async def tries() -> None:
        for _ in range(50):
            assert not await runtime.create_topic(in_a_cluster, 3, {})
        now[0] += 61
        assert not await runtime.create_topic(in_a_cluster, 3, {})

    try:
        with caplog.at_level(logging.DEBUG, logger="odradek.coordinator.runtime"):
            asyncio.run(tries())
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 2
        assert "replication factor 3" in warnings[0].getMessage()
    finally:
        harness.stop()
