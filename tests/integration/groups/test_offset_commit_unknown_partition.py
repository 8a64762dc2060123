"""An OffsetCommit for a partition the topic does not have (-1, or past its count) is answered
UNKNOWN_TOPIC_OR_PARTITION and not committed, as Kafka's KafkaApis answers it before the coordinator
sees the request; the topic's real partitions are committed. Before, the offset was stored for a
partition that does not exist, and OffsetFetch returned it."""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

TOPIC = "commit-unknown-partition"
GROUP = "commit-unknown-partition-group"


def test_offset_commit_for_a_partition_the_topic_does_not_have_is_refused(
    shared_broker: BrokerProcess,
) -> None:
    with RawClient(shared_broker.port) as client:
        create = CreateTopicsRequest(
            topics=[CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)], timeout_ms=10_000
        )
        assert [t.error_code for t in client.request(create, 5).topics] == [ErrorCode.NONE]
        partitions = [-1, 0, 2]
        commit = OffsetCommitRequest(
            group_id=GROUP,
            generation_id_or_member_epoch=-1,  # a simple commit, outside any generation
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=p, committed_offset=7, committed_metadata=""
                        )
                        for p in partitions
                    ],
                )
            ],
        )
        answered = client.request(commit, 8).topics[0].partitions
        assert [(p.partition_index, p.error_code) for p in answered] == [
            (-1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            (0, ErrorCode.NONE),
            (2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        fetch = OffsetFetchRequest(
            group_id=GROUP, topics=[OffsetFetchRequestTopic(name=TOPIC, partition_indexes=partitions)]
        )
        fetched = client.request(fetch, 7).topics[0].partitions
        assert [(p.partition_index, p.committed_offset) for p in fetched] == [(-1, -1), (0, 7), (2, -1)]
