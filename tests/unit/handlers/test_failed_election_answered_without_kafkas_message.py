"""A preferred or unclean election the controller could not make was answered with no message, so Java's
admin client put in its default text ("The preferred leader was not available.") and
kafka-leader-election printed that; Kafka 3.9's controller gives the state machine's reason ("Failed to
elect leader for partition t-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy", or
OfflinePartitionLeaderElectionStrategy(true) for an unclean election an admin asked for).
(tests/compat/kafka_tools unclean-election)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from odradek.cluster.controller.context import TopicPartition
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from tests.support.handler_services import HandlerBroker

PREFERRED, UNCLEAN = 0, 1


class _Controller:
    """The active controller, answering every election as `code`."""

    is_active = True

    def __init__(self, code: ErrorCode) -> None:
        self.code = code

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[TopicPartition] | None, timeout: float
    ) -> dict[TopicPartition, ErrorCode]:
        return {tp: self.code for tp in partitions or []}


@pytest.mark.parametrize(
    ("election_type", "code", "strategy"),
    [
        (
            PREFERRED,
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "PreferredReplicaPartitionLeaderElectionStrategy",
        ),
        (UNCLEAN, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "OfflinePartitionLeaderElectionStrategy(true)"),
    ],
)
async def test_a_failed_election_says_why_as_kafka_does(
    tmp_path: Path, election_type: int, code: ErrorCode, strategy: str
) -> None:
    broker = HandlerBroker(tmp_path, zookeeper_mode=True)
    broker.services.controller = _Controller(code)  # type: ignore[assignment]
    try:
        answer = await broker.call(
            ElectLeadersRequest(
                election_type=election_type,
                topic_partitions=[TopicPartitions(topic="orders", partitions=[3])],
                timeout_ms=1000,
            ),
            2,
        )
    finally:
        broker.close()
    assert [
        (r.topic, p.partition_id, p.error_code, p.error_message)
        for r in answer.replica_election_results
        for p in r.partition_result
    ] == [("orders", 3, code, f"Failed to elect leader for partition orders-3 under strategy {strategy}")]
