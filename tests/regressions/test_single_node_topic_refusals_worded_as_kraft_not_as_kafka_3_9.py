"""A single node refused a replication factor above its one broker, and a partition count that does not
grow, in the words of Kafka's KRaft controller ("Unable to replicate the partition 4 time(s): ...",
"The topic t currently has 3 partition(s); 2 would not be an increase."), so kafka-topics printed
something else than against Kafka 3.9's lone broker, whose words (AdminUtils, ZkAdminManager) odradek's
ZooKeeper cluster already used. (tests/compat/kafka_tools topics, topic-errors)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
)
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest, CreateTopicsResponse
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient


def test_a_single_node_words_topic_refusals_as_kafka_3_9(broker: BrokerProcess) -> None:
    with RawClient(broker.port, timeout=10) as client:
        created: CreateTopicsResponse = client.request(
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(name="grown", num_partitions=3, replication_factor=1),
                    CreatableTopic(name="too-many-copies", num_partitions=1, replication_factor=4),
                ]
            ),
            7,
        )
        grown: CreatePartitionsResponse = client.request(
            CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name="grown", count=2, assignments=None)], timeout_ms=10000
            ),
            3,
        )
        same: CreatePartitionsResponse = client.request(
            CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name="grown", count=3, assignments=None)], timeout_ms=10000
            ),
            3,
        )
    assert {t.name: (t.error_code, t.error_message) for t in created.topics} == {
        "grown": (ErrorCode.NONE, None),
        "too-many-copies": (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor: 4 larger than available brokers: 1.",
        ),
    }
    assert [(r.error_code, r.error_message) for r in grown.results] == [
        (
            ErrorCode.INVALID_PARTITIONS,
            "Topic currently has 3 partitions, which is higher than the requested 2.",
        )
    ]
    assert [(r.error_code, r.error_message) for r in same.results] == [
        (ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partitions.")
    ]
