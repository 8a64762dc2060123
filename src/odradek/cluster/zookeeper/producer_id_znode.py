"""/latest_producer_id_block: the last block of producer ids handed to a broker, as Kafka 3.9 writes it
(ProducerIdBlockZNode in kafka/zk/ZkData.scala; blocks of ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).

`{"version":1,"broker":1,"block_start":"0","block_end":"999"}`: the bounds are inclusive and written
as strings (they are longs). The znode exists from the start with no data: then no block was given yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.znode_json import (
    MalformedZnodeError,
    as_long_string,
    decode_object,
    encode,
    int_field,
    required,
)

PRODUCER_ID_BLOCK_VERSION: Final = 1
PRODUCER_ID_BLOCK_SIZE: Final = 1000
#: The largest producer id (a signed 64-bit integer).
MAX_PRODUCER_ID: Final = 2**63 - 1


class ProducerIdsExhaustedError(Exception):
    """No block of producer ids is left below 2^63 (Kafka treats this as fatal, too)."""


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """Producer ids `first_producer_id` .. `last_producer_id` (inclusive), given to `broker_id`."""

    broker_id: int
    first_producer_id: int
    size: int = PRODUCER_ID_BLOCK_SIZE

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    def next_block(self, broker_id: int) -> ProducerIdBlock:
        """The block after this one, for `broker_id`."""
        if self.last_producer_id > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
            raise ProducerIdsExhaustedError(
                f"every producer id is used: the last block ends at {self.last_producer_id}"
            )
        return ProducerIdBlock(broker_id, self.last_producer_id + 1)

    def serialize(self) -> bytes:
        return encode(
            {
                "version": PRODUCER_ID_BLOCK_VERSION,
                "broker": self.broker_id,
                "block_start": str(self.first_producer_id),
                "block_end": str(self.last_producer_id),
            }
        )

    @classmethod
    def parse(cls, data: bytes | None, path: str = paths.LATEST_PRODUCER_ID_BLOCK) -> ProducerIdBlock | None:
        """The block recorded in the znode, or None when none was given yet (no data)."""
        if not data:
            return None
        obj = decode_object(data, path)
        block_start = as_long_string(required(obj, "block_start", path), f"{path} field 'block_start'")
        block_end = as_long_string(required(obj, "block_end", path), f"{path} field 'block_end'")
        if block_start < 0 or block_end < block_start:
            raise MalformedZnodeError(f"{path} has the empty or negative block {block_start}..{block_end}")
        return cls(int_field(obj, "broker", path), block_start, block_end - block_start + 1)


def first_block(broker_id: int) -> ProducerIdBlock:
    return ProducerIdBlock(broker_id, 0)
