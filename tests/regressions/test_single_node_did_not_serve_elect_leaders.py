"""A single node did not serve ElectLeaders (it was a cluster member only API): Kafka's Java admin client
got UnsupportedVersionException and kafka-leader-election failed, where Kafka 3.9's lone broker (in
ZooKeeper mode, its own controller) answers each partition as a cluster of one does: the preferred
replica leads, so a preferred election is not needed; the leader is alive, so an unclean one is not
either; a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION "The partition does not exist.".
Asked for every partition (a null list), Kafka leaves out those that needed no election.
(tests/compat/kafka_tools elections-single-node; tests/compat/java AdminTest)
"""

from __future__ import annotations

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.elect_leaders import ElectLeadersRequest, ElectLeadersResponse, TopicPartitions
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

PREFERRED = 0
UNCLEAN = 1


def _results(response: ElectLeadersResponse) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {
        (topic.topic, p.partition_id): (p.error_code, p.error_message)
        for topic in response.replica_election_results
        for p in topic.partition_result
    }


def test_a_single_node_answers_elect_leaders_as_a_cluster_of_one(broker: BrokerProcess) -> None:
    with RawClient(broker.port, timeout=10) as client:
        client.request(
            CreateTopicsRequest(
                topics=[CreatableTopic(name="elect", num_partitions=2, replication_factor=1)]
            ),
            7,
        )
        asked = [
            TopicPartitions(topic="elect", partitions=[0, 7]),
            TopicPartitions(topic="nowhere", partitions=[0]),
        ]
        preferred: ElectLeadersResponse = client.request(
            ElectLeadersRequest(election_type=PREFERRED, topic_partitions=asked, timeout_ms=10000), 2
        )
        unclean: ElectLeadersResponse = client.request(
            ElectLeadersRequest(
                election_type=UNCLEAN,
                topic_partitions=[TopicPartitions(topic="elect", partitions=[1])],
                timeout_ms=10000,
            ),
            2,
        )
        every: ElectLeadersResponse = client.request(
            ElectLeadersRequest(election_type=PREFERRED, topic_partitions=None, timeout_ms=10000), 2
        )
    missing = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    assert preferred.error_code == ErrorCode.NONE
    assert _results(preferred) == {
        ("elect", 0): (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        ("elect", 7): missing,
        ("nowhere", 0): missing,
    }
    assert _results(unclean) == {
        ("elect", 1): (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    }
    assert (every.error_code, every.replica_election_results) == (ErrorCode.NONE, [])
