"""The brokers' registrations as the controller has seen them, and the fence that keeps the partition
states it writes from naming a registration it has not seen.

Beyond Kafka. The next controller finds the brokers that restarted while no controller watched by
comparing each named broker's registration (its czxid) with the state's last write (its mzxid,
broker_changes.on_restarts_no_controller_saw). That holds only if no controller writes a state naming
a broker after that broker registered again and before the controller handled it: a state so written
is newer than the new registration, and the restart (maybe without the broker's unflushed tail) is
hidden. A broker's registration can change at any moment between the controller's read of it and its
write, so the write itself checks: every registration moves /brokers/ids' data version on
(zookeeper/brokers.py), and each state write is a multi with a check of the version read before the
registrations were (topics.update_partition_state). A write that fails it reads the version again
and the registrations of the brokers it names; one of them registered again unseen is handled first
(term.py). Kafka 3.9's ZooKeeper controller checks only its own context (and KIP-903's broker
epochs belong to KRaft, where registrations and ISR changes are one log that the controller writes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from odradek.cluster.controller.context import LiveBroker
from odradek.cluster.zookeeper import brokers
from odradek.cluster.zookeeper.client import ZooKeeperClient


class BrokerRegistrations:
    def __init__(self, zk: ZooKeeperClient, version: int, seen: Mapping[int, LiveBroker]) -> None:
        self.zk = zk
        #: /brokers/ids' data version, read before every registration read since: a write checks it.
        self.version = version
        #: The broker epochs (czxids) the controller last read of all registrations, and handles.
        self.seen = {broker_id: broker.epoch for broker_id, broker in seen.items()}
        #: Broker epochs read at `version` (None: not registered).
        self._read: dict[int, int | None] = dict(self.seen)

    def saw(self, version: int, live: Mapping[int, LiveBroker]) -> None:
        """Every registration was read (`live`), after /brokers/ids' data version was `version`."""
        self.version = version
        self.seen = {broker_id: broker.epoch for broker_id, broker in live.items()}
        self._read = dict(self.seen)

    async def read_version(self) -> None:
        """Read /brokers/ids' data version again; once it moved, every registration is read anew."""
        version = await asyncio.to_thread(brokers.registrations_version, self.zk)
        if version != self.version:
            self.version = version
            self._read = {}

    async def epoch(self, broker_id: int) -> int | None:
        """The broker's epoch as registered now (at `version`); None when it is not registered."""
        if broker_id not in self._read:
            self._read[broker_id] = await asyncio.to_thread(brokers.broker_epoch, self.zk, broker_id)
        return self._read[broker_id]

    async def unseen(self, broker_ids: Iterable[int]) -> list[int]:
        """Those of the brokers registered anew since the controller last read every registration. A
        broker whose registration is only gone is not among them: a state naming it is no less true
        (the next controller finds it dead), and a new registration would move the version on."""
        found = []
        for broker_id in sorted(set(broker_ids)):
            epoch = await self.epoch(broker_id)
            if epoch is not None and epoch != self.seen.get(broker_id):
                found.append(broker_id)
        return found
