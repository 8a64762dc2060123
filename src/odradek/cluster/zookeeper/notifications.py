"""Purging sequential change notifications, as Kafka's ZkNodeChangeNotificationListener does.

Config changes (/config/changes) and ACL changes (/kafka-acl-changes, /kafka-acl-extended-changes)
are announced by sequential znodes that nothing else removes: each broker, after processing the
notifications under a root, deletes those created more than `changeExpirationMs` (15 minutes) ago.
Several brokers may race to delete the same one; the loser finds it gone.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from typing import Final

from kazoo.exceptions import NoNodeError

from odradek.cluster.zookeeper.client import ZooKeeperClient

#: Kafka's ZkNodeChangeNotificationListener.changeExpirationMs.
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000


def purge_expired_notifications(
    zk: ZooKeeperClient,
    root: str,
    names: Iterable[str] | None = None,
    expiration_ms: int = CHANGE_EXPIRATION_MS,
) -> list[str]:
    """Delete the notifications `names` (None: every child) under `root` created more than
    `expiration_ms` ago; returns the names this call deleted. Blocks: run it in a worker thread."""
    if names is None:
        names = zk.children(root)
    now_ms = time.time() * 1000
    deleted = []
    for name in names:
        path = f"{root}/{name}"
        found = zk.read(path)
        if found is not None and now_ms - found[1].ctime > expiration_ms:
            with contextlib.suppress(NoNodeError):  # another broker purged it first
                zk.write(zk.kazoo.delete_async, path)
                deleted.append(name)
    return deleted
