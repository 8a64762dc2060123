"""The broker's handling of a failed log dir (Kafka's ReplicaManager.LogDirFailureHandler thread).

Storage reports an I/O error in a log dir once (storage/log_dir_failure.py) and the broker wakes this
task: the replica manager stops leading and following the dir's partitions, which go offline, then, as
Kafka 3.9 in ZooKeeper mode, the broker writes /log_dir_event_notification/log_dir_event_<n> so that the
controller, odradek's or Kafka's, moves their leadership away. When no log dir is left the broker halts
at once, as Kafka's LogManager does: nothing it could still serve, and no clean-shutdown marker may be
written over logs it never flushed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from odradek.partition.replica_manager import ReplicaManager
from odradek.storage.log_manager import LogManager

log = logging.getLogger("odradek.broker")

#: How long to wait before telling the controller again when ZooKeeper could not be written.
NOTIFY_RETRY_S = 1.0


def halt() -> None:
    """Kafka's Exit.halt(1): no shutdown hooks, no clean shutdown."""
    logging.shutdown()
    os._exit(1)


async def handle_log_dir_failures(
    logs: LogManager,
    due: asyncio.Event,
    replicas: ReplicaManager,
    notify_controller: Callable[[], Awaitable[None]] | None = None,
    on_all_failed: Callable[[], None] = halt,
) -> None:
    """Each time ``due`` is set, handle the log dirs that failed since; until cancelled."""
    handled: set[Path] = set()
    while True:
        await due.wait()
        due.clear()
        for log_dir in logs.offline_log_dirs:
            if log_dir in handled:
                continue
            handled.add(log_dir)
            gone = [
                f"{topic}-{partition}" for topic, partition in await replicas.handle_log_dir_failure(log_dir)
            ]
            log.error(
                "log dir %s is offline: its partitions are not served until the broker restarts (%s)",
                log_dir,
                ", ".join(gone) or "none",
            )
            if not logs.live_log_dirs:
                log.critical(
                    "halting: every log dir (%s) has failed", ", ".join(str(d) for d in logs.log_dirs)
                )
                on_all_failed()
                return
            if notify_controller is not None:
                await _notify(notify_controller)


async def _notify(notify_controller: Callable[[], Awaitable[None]]) -> None:
    """Kafka's zkClient retries until it is connected: so does this, until it is written."""
    while True:
        try:
            await notify_controller()
            return
        except Exception as error:
            log.warning("telling the controller of a failed log dir failed (%s); retrying", error)
            await asyncio.sleep(NOTIFY_RETRY_S)
