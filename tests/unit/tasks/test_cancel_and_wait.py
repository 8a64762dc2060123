"""A controller task that swallows a cancellation (as Python 3.11's asyncio.wait_for can when the
awaited operation completes at the same moment) is still stopped: a broker never hangs on it."""

from __future__ import annotations

import asyncio

from odradek.tasks.cancelling import cancel_and_wait


async def _swallows_the_first_cancellation(swallowed: list[bool]) -> None:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        swallowed.append(True)  # the lost cancellation: the task runs on
    await asyncio.sleep(3600)


def test_a_task_that_swallowed_a_cancellation_is_cancelled_again_until_it_ends() -> None:
    async def scenario() -> list[bool]:
        swallowed: list[bool] = []
        task = asyncio.get_running_loop().create_task(_swallows_the_first_cancellation(swallowed))
        await asyncio.sleep(0)
        await asyncio.wait_for(cancel_and_wait(task, patience_s=0.05), 5)
        assert task.cancelled()
        return swallowed

    assert asyncio.run(scenario()) == [True]


def test_a_plain_cancel_and_await_would_hang_on_such_a_task() -> None:
    async def scenario() -> bool:
        task = asyncio.get_running_loop().create_task(_swallows_the_first_cancellation([]))
        await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=0.2)
        task.cancel()  # clean up
        return bool(done)

    assert asyncio.run(scenario()) is False
