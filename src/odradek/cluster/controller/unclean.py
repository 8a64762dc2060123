"""Unclean leader election: whether a partition whose ISR has no live member may take a live replica
outside it (PartitionStateMachine.collectUncleanLeaderElectionState), and the warning when one does.

The topic's `unclean.leader.election.enable` in /config/topics/<topic> wins over the broker's, as
Kafka's controller reads it at election time; the znode is read only for a partition that needs it
(no live ISR member, but a live replica).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence

from odradek.cluster.controller.context import PartitionState, TopicPartition
from odradek.cluster.controller.term import ControllerTerm
from odradek.cluster.zookeeper import configs, paths

logger = logging.getLogger(__name__)

UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"


async def unclean_allowed(term: ControllerTerm, tp: TopicPartition, state: PartitionState) -> bool:
    """True when `tp` has no live ISR member to elect, a live replica, and unclean election enabled."""
    context = term.context
    eligible = context.eligible_for(tp)
    replicas = context.replicas(tp)
    if any(r in eligible for r in state.isr if r in replicas) or not any(r in eligible for r in replicas):
        return False  # a clean election is possible, or no election at all
    overrides = await asyncio.to_thread(configs.entity_config, term.zk, paths.TOPIC_CONFIG, tp.topic)
    if UNCLEAN_LEADER_ELECTION_ENABLE not in overrides:
        return term.config.unclean_leader_election_enable
    return enabled_in(overrides)


def enabled_in(topic_configs: Mapping[str, str]) -> bool:
    """Whether a topic's overrides turn unclean election on (Kafka parses booleans without case)."""
    return topic_configs.get(UNCLEAN_LEADER_ELECTION_ENABLE, "").strip().lower() == "true"


def warn_if_unclean(
    term: ControllerTerm, tp: TopicPartition, isr: Sequence[int], leader: int, why: str
) -> None:
    """An elected leader outside the ISR may lack records the ISR acknowledged: say so."""
    if leader >= 0 and leader not in isr:
        logger.warning(
            "Controller %d: unclean leader election (%s): partition %s-%d is led by broker %d, which was "
            "not in the ISR %s; records only the ISR had are lost",
            term.controller_id,
            why,
            tp.topic,
            tp.partition,
            leader,
            list(isr),
        )
