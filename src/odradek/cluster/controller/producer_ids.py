"""AllocateProducerIds on the controller: a block of producer ids for a broker that asks for one
(KafkaController.processAllocateProducerIds).

Kafka's brokers from 3.0-IV0 ask the controller for their blocks; odradek's brokers claim theirs from
/latest_producer_id_block themselves (cluster/metadata/producer_ids.py). The controller claims the block
in the same znode, with the same compare-and-set, so blocks never overlap whichever kind of broker
asked or claimed. As in Kafka, the asker must be a live broker the controller knows
(BROKER_ID_NOT_REGISTERED) at the epoch it registered with (STALE_BROKER_EPOCH); a block that cannot
be claimed (ZooKeeper unreachable, the znode unreadable, every id used) is UNKNOWN_SERVER_ERROR, and
the broker asks again after its back-off. The znode write is not fenced by the controller epoch, in
Kafka either: it is a compare-and-set on its own version, safe whoever writes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from kazoo.exceptions import KazooException

from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.zookeeper.errors import ZooKeeperError
from odradek.cluster.zookeeper.producer_id_znode import ProducerIdBlock, ProducerIdsExhaustedError
from odradek.cluster.zookeeper.producer_ids import allocate_producer_id_block
from odradek.cluster.zookeeper.znode_json import MalformedZnodeError
from odradek.protocol.error_codes import ErrorCode

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AllocateProducerIdsResult:
    """NONE and the block claimed for the broker, or the error it is answered with."""

    error: ErrorCode
    block: ProducerIdBlock | None = None


async def on_allocate_producer_ids(
    term: ControllerTerm, broker_id: int, broker_epoch: int
) -> AllocateProducerIdsResult:
    known = term.context.live_brokers.get(broker_id)
    if known is None:
        logger.warning(
            "Controller %d ignores AllocateProducerIds from unknown broker %d", term.controller_id, broker_id
        )
        return AllocateProducerIdsResult(ErrorCode.BROKER_ID_NOT_REGISTERED)
    if known.epoch != broker_epoch:
        logger.warning(
            "Controller %d ignores AllocateProducerIds from broker %d at stale epoch %d (known epoch %d)",
            term.controller_id,
            broker_id,
            broker_epoch,
            known.epoch,
        )
        return AllocateProducerIdsResult(ErrorCode.STALE_BROKER_EPOCH)
    try:
        block = await asyncio.to_thread(allocate_producer_id_block, term.zk, broker_id)
    except (ZooKeeperError, KazooException, MalformedZnodeError, ProducerIdsExhaustedError) as error:
        logger.error(
            "Controller %d could not claim producer ids for broker %d: %s",
            term.controller_id,
            broker_id,
            error,
        )
        return AllocateProducerIdsResult(ErrorCode.UNKNOWN_SERVER_ERROR)
    logger.info(
        "Controller %d gave broker %d producer ids %d..%d",
        term.controller_id,
        broker_id,
        block.first_producer_id,
        block.last_producer_id,
    )
    return AllocateProducerIdsResult(ErrorCode.NONE, block)
