"""Loading `__consumer_offsets` at startup is one log line for all its partitions, not one per partition."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from odradek.coordinator.offset_requests import OffsetCommitContext, OffsetCommitItem
from tests.unit.coordinator.harness import Harness


def _loading_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.INFO
        and "__consumer_offsets" in r.getMessage()
        and "created" not in r.getMessage()
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
            h.coordinator.commit_offsets(context, [OffsetCommitItem("t", 0, 5, 3, "")])
        first = _loading_lines(caplog)
        caplog.clear()
        try:
            await h.restart()
        finally:
            h.stop()
        assert len(first) == 1 and first[0].startswith("loaded 50 __consumer_offsets partitions in ")
        assert first[0].endswith(": 0 groups, 0 records replayed")
        again = _loading_lines(caplog)
        assert len(again) == 1 and again[0].startswith("loaded 50 __consumer_offsets partitions in ")
        assert again[0].endswith(": 2 groups, 2 records replayed")

    asyncio.run(main())
