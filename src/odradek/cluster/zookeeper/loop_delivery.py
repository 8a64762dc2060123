"""Hand kazoo's callbacks, which run on kazoo's own thread, to the asyncio loop that owns the broker."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def deliver_on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[[T], None]) -> Callable[[T], None]:
    """A function, safe to call from any thread, that runs `callback(value)` on `loop`.

    Events after the loop has closed (a watch firing during shutdown) are dropped: nobody is left to
    act on them.
    """

    def deliver(value: T) -> None:
        if loop.is_closed():
            return
        # RuntimeError: the loop closed between the check and the call
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(callback, value)

    return deliver
