"""Producer ids for idempotent producers (coordinator/ports.py's `ProducerIdSource`), unique across
restarts: a single node's blocks in its log dir (`LocalProducerIdManager`), a ZooKeeper cluster's
claimed in /latest_producer_id_block (`ZkProducerIdManager`, as Kafka's).

A single node's: ids are handed out from blocks; the start of the next unused block is written
(atomically, fsynced) before any id of the current block is given out, so a crash can skip ids but
never repeat one. The write runs in a worker thread (a slow disk must not stall the event loop); the
manager's state changes only on the loop, once the write is durable, and callers arriving meanwhile
wait for that block.

A block file that cannot be read as a non-negative id stops start-up: guessing (say, starting again
at 0) would hand out ids that producers already used, and their batches would be taken for duplicates.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Final

from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.producer_ids import allocate_producer_id_block
from odradek.storage.files import atomic_write

BLOCK_SIZE: Final = 1000
FILE_NAME: Final = "producer-id-block"


class CorruptProducerIdBlockError(Exception):
    """The producer-id block file exists but does not hold a producer id."""


class LocalProducerIdManager:
    def __init__(self, log_dir: Path) -> None:
        self.path = log_dir / FILE_NAME
        self.next_id = self._read()
        self.block_end = self.next_id  # nothing reserved yet
        self._reserving = asyncio.Lock()

    async def generate(self) -> int:
        async with self._reserving:  # one block write at a time; ids are handed out in order
            if self.next_id >= self.block_end:
                block_end = self.next_id + BLOCK_SIZE
                await asyncio.to_thread(self._write, block_end)
                self.block_end = block_end
            producer_id = self.next_id
            self.next_id += 1
            return producer_id

    def _read(self) -> int:
        try:
            text = self.path.read_text("ascii").strip()
        except FileNotFoundError:
            return 0
        except (OSError, UnicodeDecodeError) as error:
            raise CorruptProducerIdBlockError(
                f"Cannot read the producer-id block file {self.path}: {error}"
            ) from None
        if not text.isdigit():
            raise CorruptProducerIdBlockError(
                f"The producer-id block file {self.path} is corrupt ({text[:40]!r} is not a producer id): "
                "restore it, or write an id above every producer id handed out so far"
            )
        return int(text)

    def _write(self, block_end: int) -> None:
        atomic_write(self.path, f"{block_end}\n".encode())


class ZkProducerIdManager:
    """A cluster member's (Kafka's ZkProducerIdManager): ids come from a block this broker claimed, and
    a new block is claimed (in a worker thread, one claim at a time) only when the current one is used
    up."""

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
