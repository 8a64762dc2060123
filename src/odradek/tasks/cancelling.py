"""Stopping the controller's tasks for certain.

Python 3.11's ``asyncio.wait_for`` can swallow a cancellation that arrives just as the operation it
waits for completes (fixed in 3.12): the task then runs on, and a plain ``task.cancel(); await task``
waits for ever. A broker stopping must not hang on its controller (seen: a controller broker in
``odradek cluster up`` never logged "broker stopped" and was killed), so the stop cancels again until
the task has ended.
"""

from __future__ import annotations

import asyncio
import logging

logger = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[None], patience_s: float = 0.5) -> None:
    """Cancel `task`, again every `patience_s` while it runs on, and return once it has ended."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=patience_s)
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.error("task %s ended with an error while stopping", task.get_name(), exc_info=error)
