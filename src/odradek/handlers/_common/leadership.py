"""What the data path answers for a partition this broker does not lead (or not at the client's epoch).

Produce, Fetch, ListOffsets, OffsetForLeaderEpoch and DeleteRecords ask `refusal` once per partition,
and stamp or check a client's epoch against `leader_epoch`: both are `Services.leadership`'s (the
replica manager, never the metadata cache; a single node's leads its own partitions at epoch 0).
KIP-951: from Produce v10 and Fetch v12 a NOT_LEADER_OR_FOLLOWER (and, for Fetch, FENCED_LEADER_EPOCH)
answer names the current leader and epoch, and the response carries that leader's endpoint for the
listener the client came in on (Produce v10+, Fetch v16+), so the client can go there without a
Metadata round trip.
"""

from __future__ import annotations

from collections.abc import Iterable

from odradek.cluster.metadata import BrokerEndpoint
from odradek.handlers._common.context import RequestContext
from odradek.partition.leadership import Refusal
from odradek.protocol.error_codes import ErrorCode

#: The errors whose Fetch answers name the current leader (Kafka's KafkaApis, KIP-951); Produce names
#: it for NOT_LEADER_OR_FOLLOWER only.
POINTS_TO_LEADER = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def refusal(
    context: RequestContext, topic: str, partition: int, current_leader_epoch: int = -1
) -> Refusal | None:
    """None when this broker may serve the partition; else the error and the leader it knows."""
    return context.services.leadership.leader_refusal(topic, partition, current_leader_epoch)


def replica_refusal(
    context: RequestContext, topic: str, partition: int, current_leader_epoch: int = -1
) -> Refusal | None:
    """As `refusal`, but a follower's replica may serve (a consumer's Fetch v11+, KIP-392)."""
    return context.services.leadership.replica_refusal(topic, partition, current_leader_epoch)


def leader_epoch(context: RequestContext, topic: str, partition: int) -> int | None:
    """The leader epoch this broker leads the partition at, None when it does not lead it."""
    return context.services.leadership.leader_epoch(topic, partition)


def leader_epoch_start_offset(context: RequestContext, topic: str, partition: int) -> int | None:
    """Where the epoch this broker leads the partition at began in its log (Kafka's
    leaderEpochStartOffsetOpt); None on a single node, whose high watermark never lags."""
    return context.services.leadership.leader_epoch_start_offset(topic, partition)


def leader_endpoints(context: RequestContext, leader_ids: Iterable[int]) -> list[BrokerEndpoint]:
    """The endpoints, on the client's listener, of the leaders an answer named (live ones only)."""
    wanted = {leader for leader in leader_ids if leader >= 0}
    if not wanted:
        return []
    return [b for b in context.services.advertised_brokers(context.listener) if b.node_id in wanted]
