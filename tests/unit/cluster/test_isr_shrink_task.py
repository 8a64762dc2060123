"""The leader's periodic ISR check outlives an unexpected error: one exception in a round ended the
task for good, unlogged, and from then on no lagging follower ever left the ISR (acks=all produces
waited for it until their timeout)."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from odradek.cluster.metadata import ClusterMetadata
from odradek.partition.leader_replication import LeaderReplication

pytestmark = pytest.mark.timeout(30)


def test_the_isr_shrink_task_logs_a_failed_round_and_keeps_checking(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    leaders = LeaderReplication(1, ClusterMetadata("c", 1, []), {})
    leaders.replica_lag_time_max_ms = 20
    rounds: list[int] = []

    def shrink_isrs() -> None:
        rounds.append(1)
        if len(rounds) == 1:
            raise RuntimeError("a round went wrong")

    monkeypatch.setattr(leaders, "shrink_isrs", shrink_isrs)

    async def main() -> None:
        task = asyncio.create_task(leaders.run_isr_shrinks())
        deadline = time.monotonic() + 20
        while len(rounds) < 3 and not task.done() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not task.done() and len(rounds) >= 3
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())
    assert "a round went wrong" in caplog.text
