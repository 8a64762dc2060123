"""Producer ids never repeat: blocks are reserved durably before use, off the event loop, and a block
file that cannot be read stops the broker instead of starting again at 0."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pytest

from odradek.cluster.metadata.producer_ids import (
    BLOCK_SIZE,
    FILE_NAME,
    CorruptProducerIdBlockError,
    LocalProducerIdManager,
)
from tests.support.fsync_gate import FsyncGate

pytestmark = pytest.mark.timeout(30)


def test_ids_continue_after_restart_without_repeating(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], list[int]]:
        first = [await LocalProducerIdManager(tmp_path).generate() for _ in range(1)]
        manager = LocalProducerIdManager(tmp_path)
        second = [await manager.generate() for _ in range(BLOCK_SIZE + 1)]
        return first, second

    first, second = asyncio.run(scenario())
    assert first == [0]
    assert second == list(range(BLOCK_SIZE, 2 * BLOCK_SIZE + 1))
    assert (tmp_path / FILE_NAME).read_text() == f"{3 * BLOCK_SIZE}\n"


@pytest.mark.parametrize("content", ["garbage\n", "", "-5\n", "12\x0000\n"])
def test_corrupt_producer_id_block_is_refused_not_restarted_at_0(tmp_path: Path, content: str) -> None:
    (tmp_path / FILE_NAME).write_text(content)
    with pytest.raises(CorruptProducerIdBlockError, match=re.escape(f"{tmp_path / FILE_NAME} is corrupt")):
        LocalProducerIdManager(tmp_path)


def test_block_fsync_runs_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = FsyncGate(hold_marker=FILE_NAME, hold_seconds=10)
    monkeypatch.setattr(os, "fsync", gate)

    async def scenario() -> tuple[int, int, int]:
        manager = LocalProducerIdManager(tmp_path)
        first = asyncio.ensure_future(manager.generate())
        second = asyncio.ensure_future(manager.generate())
        assert await asyncio.to_thread(gate.holding.wait, 10), "the block was never fsynced"
        # The block's fsync is held: the loop still runs, and no id was handed out before it is durable.
        ticks = 0
        for _ in range(3):
            await asyncio.sleep(0)
            ticks += 1
        assert not first.done() and not second.done() and manager.block_end == 0
        gate.release()
        return await first, await second, ticks

    first, second, ticks = asyncio.run(scenario())
    assert (first, second, ticks) == (0, 1, 3)
    assert gate.calls_under(FILE_NAME) and not [call for call in gate.calls if call.on_main_thread]
