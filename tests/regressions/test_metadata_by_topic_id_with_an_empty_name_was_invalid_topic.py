"""A Metadata request for a topic by id (v12+) was answered INVALID_TOPIC_EXCEPTION with an empty name
when the topic's name field was "" instead of null: Kafka's Java client 4.x sends it so (the field's
default) to learn the names of the topics a KIP-848 regex subscription was assigned, and its consumer
never got past that (tests/compat/java ConsumerProtocolRegexTest). Kafka answers by id whenever the
request carries a topic id (KafkaApis.handleTopicMetadataRequest: `useTopicId`), whatever the names.
"""

from __future__ import annotations

from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient


def test_a_topic_asked_for_by_id_with_an_empty_name_is_described_by_its_id(broker: BrokerProcess) -> None:
    with RawClient(broker.port, timeout=10) as client:
        created = client.request(
            CreateTopicsRequest(
                topics=[CreatableTopic(name="by-id", num_partitions=2, replication_factor=1)]
            ),
            7,
        )
        topic_id = created.topics[0].topic_id
        described = client.request(
            MetadataRequest(topics=[MetadataRequestTopic(topic_id=topic_id, name="")]), 12
        )
    [topic] = described.topics
    assert (topic.error_code, topic.name, topic.topic_id) == (0, "by-id", topic_id)
    assert sorted(p.partition_index for p in topic.partitions) == [0, 1]
