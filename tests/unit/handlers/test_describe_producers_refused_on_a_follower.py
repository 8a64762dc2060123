"""DescribeProducers refused a partition this broker follows (NOT_LEADER_OR_FOLLOWER), so
`kafka-transactions find-hanging --broker-id N`, which asks broker N about every partition it has a
replica of, failed on a cluster; Kafka 3.9 (ReplicaManager.activeProducerState) answers from any local
replica, leader or follower. (tests/compat/kafka_tools transactions, cluster)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.describe_producers import DescribeProducersRequest, TopicRequest
from tests.support.controller_requests import leader_and_isr
from tests.support.handler_services import HandlerBroker
from tests.unit.handlers.cluster_member import TOPIC, led_by_1, led_here


async def test_a_follower_describes_the_producers_of_its_replica(cluster_member: HandlerBroker) -> None:
    await cluster_member.call(leader_and_isr([led_here(0), led_by_1(1)]), 7)
    answer = await cluster_member.call(
        DescribeProducersRequest(topics=[TopicRequest(name=TOPIC, partition_indexes=[0, 1, 2])]), 0
    )
    codes = {p.partition_index: p.error_code for t in answer.topics for p in t.partitions}
    # 0 led here, 1 followed here, 2 unknown to the cluster
    assert codes == {0: ErrorCode.NONE, 1: ErrorCode.NONE, 2: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
