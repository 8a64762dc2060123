"""A single node did not serve AlterPartitionReassignments or ListPartitionReassignments (cluster member
only APIs): kafka-reassign-partitions --execute and --list failed with UnsupportedVersionException,
where Kafka 3.9's lone broker (in ZooKeeper mode, its own controller) answers as a cluster of one: a
partition "reassigned" to the one broker it is on is done at once, a broker that is not there is
INVALID_REPLICA_ASSIGNMENT, a cancel finds nothing in progress, and no reassignment is ever listed.
(tests/compat/kafka_tools reassign-single-node)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartition,
    ReassignableTopic,
)
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    ListPartitionReassignmentsTopics,
)
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

#: A single node's broker id when none is set (broker.id)
NODE = 1


def test_a_single_node_answers_partition_reassignments_as_a_cluster_of_one(broker: BrokerProcess) -> None:
    with RawClient(broker.port, timeout=10) as client:
        client.request(
            CreateTopicsRequest(
                topics=[CreatableTopic(name="moved", num_partitions=2, replication_factor=1)]
            ),
            7,
        )
        altered: AlterPartitionReassignmentsResponse = client.request(
            AlterPartitionReassignmentsRequest(
                topics=[
                    ReassignableTopic(
                        name="moved",
                        partitions=[
                            ReassignablePartition(partition_index=0, replicas=[NODE]),
                            ReassignablePartition(partition_index=1, replicas=[2]),
                            ReassignablePartition(partition_index=2, replicas=None),
                            ReassignablePartition(partition_index=3, replicas=[NODE]),
                        ],
                    ),
                    ReassignableTopic(
                        name="moved", partitions=[ReassignablePartition(partition_index=4, replicas=[])]
                    ),
                ]
            ),
            0,
        )
        listed: ListPartitionReassignmentsResponse = client.request(ListPartitionReassignmentsRequest(), 0)
        listed_some: ListPartitionReassignmentsResponse = client.request(
            ListPartitionReassignmentsRequest(
                topics=[ListPartitionReassignmentsTopics(name="moved", partition_indexes=[0, 9])]
            ),
            0,
        )
    results = {
        (topic.name, p.partition_index): (p.error_code, p.error_message)
        for topic in altered.responses
        for p in topic.partitions
    }
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert altered.error_code == ErrorCode.NONE
    assert results == {
        ("moved", 0): (ErrorCode.NONE, None),
        ("moved", 1): (
            invalid,
            f"Replica assignment has brokers that are not alive. Replica list: [2], live broker list: "
            f"[{NODE}]",
        ),
        ("moved", 2): (ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None),
        ("moved", 3): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
        ("moved", 4): (invalid, "Empty replica list specified in partition reassignment."),
    }
    assert (listed.error_code, listed.topics) == (ErrorCode.NONE, [])
    assert (listed_some.error_code, listed_some.topics) == (ErrorCode.NONE, [])
