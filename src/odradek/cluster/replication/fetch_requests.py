"""The requests a replica fetcher (replica_fetcher.py) sends its leader: the Fetch of each round, with
each partition's position and leader epoch in the fetch session (Kafka's ReplicaFetcherThread.buildFetch),
and the ListOffsets as a replica that resolves OFFSET_OUT_OF_RANGE (Kafka's RemoteLeaderEndPoint
fetchLatestOffset / fetchEarliestOffset)."""

from __future__ import annotations

import logging

from odradek.cluster.replication.fetch_session import FetchPlan
from odradek.cluster.replication.fetch_state import FetcherSettings, FetchState
from odradek.cluster.replication.leader_connection import LeaderConnection
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic, ReplicaState
from odradek.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)

log = logging.getLogger("odradek.cluster.replication.fetcher")

#: Before v13 a Fetch names topics (for a partition whose topic id this broker does not know).
FETCH_VERSION_BY_NAME = 12
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2


def fetch_request(
    plan: FetchPlan[FetchState], version: int, settings: FetcherSettings, replica_id: int, broker_epoch: int
) -> FetchRequest:
    """The Fetch of the partitions `plan` names, each from its log end at its leader epoch."""
    topics: dict[str, FetchTopic] = {}
    for state in plan.named:
        topic = topics.get(state.topic)
        if topic is None:
            topic = FetchTopic(topic=state.topic, partitions=[])
            if state.topic_id is not None:
                topic.topic_id = state.topic_id
            topics[state.topic] = topic
        latest = state.log.latest_epoch
        topic.partitions.append(
            FetchPartition(
                partition=state.partition,
                current_leader_epoch=state.leader_epoch,
                fetch_offset=state.log.log_end_offset,
                last_fetched_epoch=latest if latest is not None else -1,
                log_start_offset=state.log.log_start_offset,
                partition_max_bytes=settings.fetch_max_bytes,
            )
        )
    return FetchRequest(
        replica_id=replica_id,
        replica_state=ReplicaState(replica_id=replica_id, replica_epoch=broker_epoch),
        max_wait_ms=settings.fetch_wait_max_ms,
        min_bytes=settings.fetch_min_bytes,
        max_bytes=settings.fetch_response_max_bytes,
        isolation_level=0,
        session_id=plan.session_id,
        session_epoch=plan.epoch,
        topics=list(topics.values()),
        forgotten_topics_data=[],
    )


async def leader_offset(
    connection: LeaderConnection,
    replica_id: int,
    state: FetchState,
    timestamp: int,
    settings: FetcherSettings,
) -> int | None:
    """The leader's offset for `timestamp` (LATEST_TIMESTAMP: its log end; EARLIEST_TIMESTAMP: its log
    start), asked as replica `replica_id` at the partition's leader epoch; None when it refused."""
    request = ListOffsetsRequest(
        replica_id=replica_id,
        isolation_level=0,
        topics=[
            ListOffsetsTopic(
                name=state.topic,
                partitions=[
                    ListOffsetsPartition(
                        partition_index=state.partition,
                        current_leader_epoch=state.leader_epoch,
                        timestamp=timestamp,
                    )
                ],
            )
        ],
    )
    response: ListOffsetsResponse = await connection.send(request, settings.list_offsets_version)
    for topic in response.topics:
        for partition in topic.partitions:
            if partition.error_code == ErrorCode.NONE:
                return int(partition.offset)
            log.info(
                "%s-%d: ListOffsets answered %s",
                state.topic,
                state.partition,
                ErrorCode(partition.error_code).name,
            )
    return None
