"""Waiting, in an in-process test, for what background tasks bring about (a condition, not a time)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Return once `condition()` holds, checking every 10 ms; TimeoutError after `timeout` seconds."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)
