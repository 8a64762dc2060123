"""The partitions' end offsets the group coordinator tells a share group's lag with (Kafka's
NetworkPartitionMetadataClient): read here for what this broker leads, one ListOffsets (latest, read
uncommitted, as a consumer) per other leader, and each failure answered for its partitions."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from odradek.cluster.metadata import BrokerEndpoint, ClusterMetadata, LiveBroker, PartitionState, TopicState
from odradek.cluster.partition_end_offsets import PartitionEndOffsetsClient
from odradek.config.broker import BrokerConfig
from odradek.partition.end_offsets import EndOffset
from odradek.partition.replica_manager import ReplicaManager as PartitionReplicas
from odradek.protocol.api_keys import ApiKey
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import list_offsets as lo
from odradek.protocol.records import Record, build_record_batch
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition
from tests.support.fake_broker import FakeBroker, Received
from tests.support.ports import free_port


async def answer_list_offsets(received: Received) -> lo.ListOffsetsResponse:
    request: lo.ListOffsetsRequest = received.body
    return lo.ListOffsetsResponse(
        topics=[
            lo.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    lo.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.NONE if p.partition_index == 1 else 9999,
                        offset=40 + p.partition_index,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ]
    )


def test_end_offsets_are_read_here_asked_of_other_leaders_and_failures_answered(tmp_path: Path) -> None:
    async def scenario() -> None:
        leader = await FakeBroker(2, responder=answer_list_offsets).start()
        config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)}, warn_unknown=False)
        cluster = ClusterMetadata("c", 1, [])
        gone = free_port()
        cluster.set_live_brokers(
            [
                LiveBroker(1, {"PLAINTEXT": BrokerEndpoint(1, "127.0.0.1", 1)}),
                LiveBroker(2, {"PLAINTEXT": BrokerEndpoint(2, "127.0.0.1", leader.port)}),
                LiveBroker(3, {"PLAINTEXT": BrokerEndpoint(3, "127.0.0.1", gone)}),
            ]
        )
        owners = [1, 2, 2, 3, -1]  # partition -> its leader (-1: none)
        states = [PartitionState(p, owner, 5, [owner], [owner]) for p, owner in enumerate(owners)]
        topic_id = uuid.uuid4()
        cluster.add_topic(TopicState("t", topic_id, states))
        logs = LogManager([tmp_path])
        here = logs.get_or_create_log("t", 0)
        here.append(bytearray(build_record_batch([Record(i, 1, None, b"x") for i in range(3)])))
        here.update_high_watermark(3)
        leadership = PartitionReplicas(1, cluster, logs)
        leadership.lead_alone("t", topic_id, [0])  # partition 0 led here
        client = PartitionEndOffsetsClient(1, config, cluster, leadership, logs)
        try:
            ends = await client.latest_offsets([TopicPartition("t", p) for p in range(5)])
        finally:
            client.close()
            await leader.stop()
            logs.shutdown()
        assert ends == {
            TopicPartition("t", 0): EndOffset(3),
            TopicPartition("t", 1): EndOffset(41),
            TopicPartition("t", 2): EndOffset(-1, ErrorCode.UNKNOWN_SERVER_ERROR),  # a code we do not know
            TopicPartition("t", 3): EndOffset(-1, ErrorCode.NETWORK_EXCEPTION),
            TopicPartition("t", 4): EndOffset(-1, ErrorCode.LEADER_NOT_AVAILABLE),
        }
        [asked] = leader.requests_of(ApiKey.LIST_OFFSETS)
        assert (asked.replica_id, asked.isolation_level) == (-1, 0)
        assert [(t.name, [(p.partition_index, p.timestamp) for p in t.partitions]) for t in asked.topics] == [
            ("t", [(1, -1), (2, -1)])
        ]

    asyncio.run(scenario())
