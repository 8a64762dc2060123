"""The controller's data watches, one per znode: each puts an event on the controller's queue every time
its znode changes, until the znode goes or the watch is discarded (kazoo stops a DataWatch whose
callback returns False). Kafka's BrokerModificationsHandler (/brokers/ids/<id>: a registration rewritten
in place, new endpoints, changes no child of /brokers/ids) and PartitionModificationsHandler
(/brokers/topics/<topic>, until the topic is deleted)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from kazoo.protocol.states import ZnodeStat

from odradek.cluster.controller.events import ControllerEvent
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.loop_delivery import deliver_on_loop

Key = TypeVar("Key", bound=Hashable)


class ZnodeWatches(Generic[Key]):
    def __init__(
        self,
        zk: ZooKeeperClient,
        path: Callable[[Key], str],
        event: Callable[[Key], ControllerEvent],
        put: Callable[[ControllerEvent], None],
    ) -> None:
        """``path``: the znode of a key; ``event``: what its change puts on the queue (``put``)."""
        self._zk = zk
        self._path = path
        self._event = event
        self._put = put
        self._watched: set[Key] = set()

    def watch(self, key: Key, loop: asyncio.AbstractEventLoop | None) -> None:
        """Watch ``key``'s znode from now on (nothing before the controller runs on ``loop``)."""
        if key in self._watched or loop is None:
            return
        self._watched.add(key)
        deliver = deliver_on_loop(loop, lambda _: self._put(self._event(key)))

        def changed(data: bytes | None, stat: ZnodeStat | None) -> bool:
            if stat is None or key not in self._watched:
                self._watched.discard(key)
                return False  # gone: a new one is watched when it appears
            deliver(None)
            return True

        self._zk.kazoo.DataWatch(self._path(key), changed)

    def discard(self, key: Key) -> None:
        """Stop watching ``key``'s znode (at its next change)."""
        self._watched.discard(key)
