"""Creating `__consumer_offsets` is one log line, and loading it at startup one line for all its partitions,
not one per partition."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from tests.unit.coordinator.harness import Harness


def _offsets_topic_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.INFO and "__consumer_offsets" in r.getMessage()
    ]


def test_startup_logs_one_summary_line_for_the_offsets_topic_partitions(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="odradek")

    async def main() -> None:
        h = Harness(tmp_path, **{"offsets.topic.num.partitions": "50"})
        await h.start()
        await h.create_topic("t", 1)
        for group in ("billing", "shipping"):
            context = OffsetCommitContext(group, "", -1, None, -1, 8)
            h.coordinator.offsets.commit_offsets(context, [OffsetCommitItem("t", 0, 5, 3, "")])
        first = _offsets_topic_lines(caplog)
        caplog.clear()
        try:
            await h.restart()
        finally:
            h.stop()
        # Its creation (one line, by the topic admin), then its loading (one line for 50 partitions).
        assert len(first) == 2 and first[0].startswith("created topic __consumer_offsets (id ")
        assert first[1].startswith("loaded 50 __consumer_offsets partitions in ")
        assert first[1].endswith(": 0 groups, 0 records replayed")
        again = _offsets_topic_lines(caplog)
        assert len(again) == 1 and again[0].startswith("loaded 50 __consumer_offsets partitions in ")
        assert again[0].endswith(": 2 groups, 2 records replayed")

    asyncio.run(main())
