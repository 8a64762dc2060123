"""Producer ids unique across a ZooKeeper cluster: blocks claimed in /latest_producer_id_block.

The ZooKeeper-mode counterpart of coordinator.producer_ids.ProducerIdManager (Kafka's
ZkProducerIdManager): ids come from a block this broker claimed, and a new block is claimed (in a
worker thread, one claim at a time) only when the current one is used up.
"""

from __future__ import annotations

import asyncio

from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.producer_ids import allocate_producer_id_block


class ZkProducerIdManager:
    def __init__(self, zk: ZooKeeperClient, broker_id: int) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self.next_id = 0
        self.block_end = 0  # nothing claimed yet: the first id claims a block
        self._claiming = asyncio.Lock()

    async def generate(self) -> int:
        async with self._claiming:  # ids are handed out in order, one claim at a time
            if self.next_id >= self.block_end:
                block = await asyncio.to_thread(allocate_producer_id_block, self.zk, self.broker_id)
                self.next_id = block.first_producer_id
                self.block_end = block.last_producer_id + 1
            producer_id = self.next_id
            self.next_id += 1
            return producer_id
