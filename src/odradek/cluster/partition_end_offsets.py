"""The end offsets of partitions from their leaders (Kafka's NetworkPartitionMetadataClient), for the
share-group lag the group coordinator tells (KIP-1226).

A partition this broker leads is read here (its high watermark); the others are asked of their
leaders with one ListOffsets (LATEST, read uncommitted, as a consumer) per leader, all at once. A
partition without a known leader answers LEADER_NOT_AVAILABLE, a leader that cannot be reached
NETWORK_EXCEPTION (Kafka retries first; here the admin client's next describe is the retry).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Collection

from odradek.cluster.broker_client import BrokerConnections, BrokerUnreachable, inter_broker_endpoint
from odradek.cluster.inter_broker_connection import PLAINTEXT, InterBrokerSecurity
from odradek.cluster.inter_broker_versions import InterBrokerVersions
from odradek.cluster.metadata import ClusterMetadata
from odradek.config.broker import BrokerConfig
from odradek.partition.end_offsets import EndOffset
from odradek.partition.leadership import Leadership
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages import list_offsets as lo
from odradek.storage.log_manager import LogManager
from odradek.storage.partition import TopicPartition

log = logging.getLogger("odradek.cluster.end_offsets")

#: ListOffsets' timestamp for "the latest offset".
LATEST_TIMESTAMP = -1
#: A consumer's replica id (not a follower's) and isolation level (read uncommitted).
CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0


class PartitionEndOffsetsClient:
    def __init__(
        self,
        node_id: int,
        config: BrokerConfig,
        cluster: ClusterMetadata,
        leadership: Leadership,
        logs: LogManager,
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.node_id = node_id
        self.config = config
        self.cluster = cluster
        self.leadership = leadership
        self.logs = logs
        self.version = InterBrokerVersions.at(config.inter_broker_protocol_version).list_offsets
        self.connections = BrokerConnections.of_broker(config, node_id, "end-offsets", security)

    def close(self) -> None:
        self.connections.close()

    async def latest_offsets(self, partitions: Collection[TopicPartition]) -> dict[TopicPartition, EndOffset]:
        answers: dict[TopicPartition, EndOffset] = {}
        elsewhere: dict[int, list[TopicPartition]] = defaultdict(list)
        for tp in partitions:
            if self.leadership.leader_epoch(tp.topic, tp.partition) is not None:
                answers[tp] = self._here(tp)
                continue
            state = self.cluster.partition(tp.topic, tp.partition)
            leader = -1 if state is None else state.leader_id
            if leader < 0 or leader == self.node_id:
                answers[tp] = EndOffset(-1, ErrorCode.LEADER_NOT_AVAILABLE)
            else:
                elsewhere[leader].append(tp)
        asked = await asyncio.gather(*(self._ask(leader, tps) for leader, tps in elsewhere.items()))
        for answered in asked:
            answers.update(answered)
        return answers

    def _here(self, tp: TopicPartition) -> EndOffset:
        partition_log = self.logs.get_log(tp.topic, tp.partition)
        if partition_log is None:
            return EndOffset(-1, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return EndOffset(partition_log.high_watermark)

    async def _ask(self, leader: int, partitions: list[TopicPartition]) -> dict[TopicPartition, EndOffset]:
        endpoint = inter_broker_endpoint(self.config, self.cluster, leader)
        if endpoint is None:
            return {tp: EndOffset(-1, ErrorCode.LEADER_NOT_AVAILABLE) for tp in partitions}
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(tp.partition)
        request = lo.ListOffsetsRequest(
            replica_id=CONSUMER_REPLICA_ID,
            isolation_level=READ_UNCOMMITTED,
            topics=[
                lo.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        lo.ListOffsetsPartition(partition_index=p, timestamp=LATEST_TIMESTAMP)
                        for p in indexes
                    ],
                )
                for topic, indexes in by_topic.items()
            ],
        )
        try:
            response: lo.ListOffsetsResponse = await self.connections.to(leader, endpoint).request(
                request, self.version
            )
        except BrokerUnreachable as error:
            log.warning(
                "end offsets of %d partitions not read from broker %d: %s", len(partitions), leader, error
            )
            return {tp: EndOffset(-1, ErrorCode.NETWORK_EXCEPTION) for tp in partitions}
        answered = {
            TopicPartition(topic.name, p.partition_index): _end_offset(p)
            for topic in response.topics
            for p in topic.partitions
        }
        unanswered = EndOffset(-1, ErrorCode.UNKNOWN_SERVER_ERROR)
        return {tp: answered.get(tp, unanswered) for tp in partitions}


def _end_offset(answer: lo.ListOffsetsPartitionResponse) -> EndOffset:
    """A leader's answer; an error code this broker does not know (a newer leader's) as
    UNKNOWN_SERVER_ERROR."""
    if answer.error_code == ErrorCode.NONE:
        return EndOffset(answer.offset)
    try:
        return EndOffset(-1, ErrorCode(answer.error_code))
    except ValueError:
        return EndOffset(-1, ErrorCode.UNKNOWN_SERVER_ERROR)
