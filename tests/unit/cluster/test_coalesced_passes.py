"""ZooKeeper notifications' reactions run one pass at a time: triggers during a pass make exactly one
more pass after it; a failing pass is logged and the next trigger runs again."""

from __future__ import annotations

import asyncio

from odradek.cluster.zookeeper.coalesced import CoalescedPasses


def test_triggers_during_a_pass_make_one_more_pass_never_two_at_once() -> None:
    asyncio.run(_one_more_pass())


async def _one_more_pass() -> None:
    running, passes, gate = 0, [], asyncio.Event()

    async def work() -> None:
        nonlocal running
        running += 1
        assert running == 1
        passes.append(len(passes))
        if len(passes) == 1:
            await gate.wait()
        running -= 1

    coalesced = CoalescedPasses(work, "test changes")
    coalesced.trigger()
    await asyncio.sleep(0)
    for _ in range(5):
        coalesced.trigger()  # during the first pass
    gate.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert passes == [0, 1]


def test_a_failing_pass_is_logged_and_the_next_trigger_runs_again() -> None:
    asyncio.run(_failing_pass())


async def _failing_pass() -> None:
    calls = []

    async def work() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("ZooKeeper away")

    coalesced = CoalescedPasses(work, "test changes")
    coalesced.trigger()
    await asyncio.sleep(0.01)
    coalesced.trigger()
    await asyncio.sleep(0.01)
    assert len(calls) == 2
