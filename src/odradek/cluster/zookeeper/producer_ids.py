"""Blocks of producer ids unique across the cluster, as Kafka 3.9's ZkProducerIdManager allocates them.

Read /latest_producer_id_block with its zkVersion, write the next block at that version; a broker that
lost the race (BadVersion) reads again and takes the block after the winner's. A broker then hands out
ids from its block alone, without asking ZooKeeper again until the block is used up.
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError

from odradek.cluster.zookeeper import paths
from odradek.cluster.zookeeper.client import ZooKeeperClient
from odradek.cluster.zookeeper.producer_id_znode import ProducerIdBlock, first_block


def allocate_producer_id_block(zk: ZooKeeperClient, broker_id: int) -> ProducerIdBlock:
    """Claim the next block of PRODUCER_ID_BLOCK_SIZE producer ids for `broker_id`."""
    while True:
        found = zk.read(paths.LATEST_PRODUCER_ID_BLOCK)
        if found is None:
            block = first_block(broker_id)
            try:
                zk.create_persistent_path(paths.LATEST_PRODUCER_ID_BLOCK, block.serialize(), exist_ok=False)
                return block
            except NodeExistsError:
                continue  # another broker created it first: read its block
        data, stat = found
        latest = ProducerIdBlock.parse(data)
        block = first_block(broker_id) if latest is None else latest.next_block(broker_id)
        try:
            zk.write(zk.kazoo.set_async, paths.LATEST_PRODUCER_ID_BLOCK, block.serialize(), stat.version)
            return block
        except BadVersionError:
            continue  # another broker took a block meanwhile
