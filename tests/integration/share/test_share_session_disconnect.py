"""A share consumer whose connection drops, over the wire on a single node: what its share session held
is available to another member at once (well within the 30 s acquisition lock), its delivery counted
once, as Kafka 4.4's disconnect listener and release; the session is gone with the connection. And a
deleted topic leaves the group's offsets (the group coordinator's cleanup)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import share_fetch as sf
from odradek.protocol.messages import share_group_heartbeat as hb
from odradek.protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from odradek.protocol.messages.delete_topics import DeleteTopicsRequest
from odradek.protocol.messages.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from odradek.protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from odradek.protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from odradek.protocol.records import Record, build_record_batch
from tests.support.broker_process import BrokerProcess
from tests.support.raw_client import RawClient

pytestmark = pytest.mark.timeout(120)
SETTINGS = {
    "offsets.topic.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",
    "group.coordinator.rebalance.protocols": "classic,consumer,share",
}
GROUP, TOPIC = "disconnects", "held"
#: What the test allows for the release: far below the acquisition lock (30 s), above a loaded machine.
WELL_WITHIN_THE_LOCK_S = 15


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "data", SETTINGS).start()
    try:
        yield process
    finally:
        process.stop()


def test_a_dropped_connection_gives_its_members_records_to_another_at_once(broker: BrokerProcess) -> None:
    with RawClient(broker.port) as admin:
        created = admin.request(
            CreateTopicsRequest(
                topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)], timeout_ms=10_000
            ),
            5,
        )
        assert created.topics[0].error_code == ErrorCode.NONE
        topic_id = (
            admin.request(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)]), 12).topics[0].topic_id
        )
        holder, other = str(uuid.uuid4()), str(uuid.uuid4())
        join(admin, holder)
        join(admin, other)
        held = RawClient(broker.port)
        try:
            assert fetch(held, holder, topic_id, 0).error_code == ErrorCode.NONE  # opened at the HW
            produce(admin, 3)
            assert acquired(fetch(held, holder, topic_id, 1, max_wait_ms=5000)) == [(0, 2, 1)]
        finally:
            held.close()  # the consumer's process dies: its connection drops, no session close
        dropped = time.monotonic()
        with RawClient(broker.port) as taker:
            opened = fetch(taker, other, topic_id, 0)  # a session's first fetch acquires too
            assert opened.error_code == ErrorCode.NONE
            got = acquired(opened)
            epoch = 1
            while not got and time.monotonic() - dropped < WELL_WITHIN_THE_LOCK_S:
                got = acquired(fetch(taker, other, topic_id, epoch, max_wait_ms=500))
                epoch += 1
            assert got == [(0, 2, 2)], f"after {time.monotonic() - dropped:.1f} s"
        with RawClient(broker.port) as again:
            gone = fetch(again, holder, topic_id, 2)
            assert gone.error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_a_deleted_topic_is_no_longer_among_the_share_groups_offsets(broker: BrokerProcess) -> None:
    """Kafka 4.4's group coordinator forgets a deleted topic's partitions in every share group's
    state-partition metadata (maybeCleanupShareGroupState): DescribeShareGroupOffsets of the whole group
    lists it no more. It was listed for good, each partition UNKNOWN_TOPIC_OR_PARTITION."""
    with RawClient(broker.port) as admin:
        created = admin.request(
            CreateTopicsRequest(
                topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=1)], timeout_ms=10_000
            ),
            5,
        )
        assert created.topics[0].error_code == ErrorCode.NONE
        join(admin, str(uuid.uuid4()))
        assert [t.topic_name for t in _whole_group_offsets(admin).topics] == [TOPIC]
        deleted = admin.request(DeleteTopicsRequest(topic_names=[TOPIC], timeout_ms=10_000), 5)
        assert deleted.responses[0].error_code == ErrorCode.NONE
        deadline = time.monotonic() + 10  # the coordinator's write is not waited for by DeleteTopics
        while _whole_group_offsets(admin).topics and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _whole_group_offsets(admin).topics == []


def _whole_group_offsets(client: RawClient) -> Any:
    request = DescribeShareGroupOffsetsRequest(
        groups=[DescribeShareGroupOffsetsRequestGroup(group_id=GROUP, topics=None)]
    )
    (group,) = client.request(request, 1).groups
    assert group.error_code == ErrorCode.NONE, group
    return group


def join(client: RawClient, member_id: str) -> None:
    """Heartbeat until the member is assigned the partition (its share state initialised first)."""
    epoch = 0
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        beat = client.request(
            hb.ShareGroupHeartbeatRequest(
                group_id=GROUP,
                member_id=member_id,
                member_epoch=epoch,
                subscribed_topic_names=[TOPIC] if epoch == 0 else None,
            ),
            1,
        )
        if beat.error_code in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE):
            time.sleep(0.1)
            continue
        assert beat.error_code == ErrorCode.NONE, beat
        epoch = beat.member_epoch
        if beat.assignment is not None and beat.assignment.topic_partitions:
            return
        time.sleep(0.1)
    raise AssertionError(f"{member_id} was never assigned a partition")


def produce(client: RawClient, count: int) -> None:
    records = [Record(offset=i, timestamp=1, key=None, value=b"r%d" % i) for i in range(count)]
    answer = client.request(
        ProduceRequest(
            acks=-1,
            timeout_ms=10_000,
            topic_data=[
                TopicProduceData(
                    name=TOPIC,
                    partition_data=[
                        PartitionProduceData(index=0, records=bytes(build_record_batch(records)))
                    ],
                )
            ],
        ),
        9,
    )
    assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def fetch(
    client: RawClient, member_id: str, topic_id: uuid.UUID, epoch: int, *, max_wait_ms: int = 0
) -> sf.ShareFetchResponse:
    response: sf.ShareFetchResponse = client.request(
        sf.ShareFetchRequest(
            group_id=GROUP,
            member_id=member_id,
            share_session_epoch=epoch,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=1 << 20,
            max_records=500,
            batch_size=500,
            topics=[sf.FetchTopic(topic_id=topic_id, partitions=[sf.FetchPartition(partition_index=0)])],
        ),
        1,
    )
    return response


def acquired(response: sf.ShareFetchResponse) -> list[tuple[int, int, int]]:
    return [
        (a.first_offset, a.last_offset, a.delivery_count)
        for topic in response.responses
        for p in topic.partitions
        for a in p.acquired_records
    ]
