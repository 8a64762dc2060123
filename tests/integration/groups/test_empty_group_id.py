"""The empty group id: Kafka's group coordinator keeps it "for backwards compatibility" for
OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups (only a null id is INVALID_GROUP_ID), so
old clients that commit without a group id keep their offsets. Before, OffsetCommit and DeleteGroups
answered INVALID_GROUP_ID for it."""

from __future__ import annotations

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_groups import DeleteGroupsRequest
from odradek.protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from odradek.protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestTopic
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(60)

TOPIC = "empty-group-id"


def test_the_empty_group_id_commits_fetches_and_deletes_offsets(shared_broker: BrokerProcess) -> None:
    with RawClient(shared_broker.port) as client:
        create = CreateTopicsRequest(
            topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)], timeout_ms=10_000
        )
        assert [t.error_code for t in client.request(create, 5).topics] == [ErrorCode.NONE]

        assert _fetch(client) == -1
        assert client.request(DeleteGroupsRequest(groups_names=[""]), 2).results[0].error_code == (
            ErrorCode.GROUP_ID_NOT_FOUND
        )
        commit = OffsetCommitRequest(
            group_id="",
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                OffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=[
                        OffsetCommitRequestPartition(
                            partition_index=0, committed_offset=5, committed_metadata=""
                        )
                    ],
                )
            ],
        )
        assert client.request(commit, 8).topics[0].partitions[0].error_code == ErrorCode.NONE
        assert _fetch(client) == 5
        assert (
            client.request(DeleteGroupsRequest(groups_names=[""]), 2).results[0].error_code == ErrorCode.NONE
        )
        assert _fetch(client) == -1


def _fetch(client: RawClient) -> int:
    request = OffsetFetchRequest(
        group_id="", topics=[OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]
    )
    response = client.request(request, 7)
    assert response.error_code == ErrorCode.NONE
    return int(response.topics[0].partitions[0].committed_offset)
