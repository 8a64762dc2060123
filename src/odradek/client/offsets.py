"""A topic's partitions and their offsets through odradek's own client: Metadata, then ListOffsets to
each partition's leader (earliest -2, latest -1, or the first offset at or after a timestamp).

Errors that clear by themselves (leaders moving) are asked again until the deadline; any other, a
topic the login may not describe (TOPIC_AUTHORIZATION_FAILED) among them, is raised as RequestError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from odradek.client.cluster import Cluster, RequestError, retrying
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.list_offsets import ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic

E = ErrorCode
TopicPartition = tuple[str, int]
#: ListOffsets v5: timestamps and the leader epoch, Kafka 2.2's (not flexible).
LIST_OFFSETS_VERSION = 5


def topic_partitions(cluster: Cluster, topics: Sequence[str] | None) -> dict[str, list[int]]:
    """The partitions of `topics` (None: every topic the login may describe), never creating one;
    unknown topics are left out, one the login may not describe raises RequestError."""
    response = cluster.metadata(topics, auto_create=False)
    found: dict[str, list[int]] = {}
    for topic in response.topics:
        error = ErrorCode(topic.error_code)
        if error is E.TOPIC_AUTHORIZATION_FAILED:
            raise RequestError(f"Not authorized to access topics: [{topic.name}]", error)
        if error is E.NONE:
            found[topic.name] = sorted(p.partition_index for p in topic.partitions)
    return found


def list_offsets(
    cluster: Cluster, queries: Mapping[TopicPartition, int], timeout_s: float
) -> dict[TopicPartition, int]:
    """The offset each query (-2 earliest, -1 latest, else a timestamp) finds; -1 for a timestamp after
    the last record."""
    found: dict[TopicPartition, int] = {}

    def attempt() -> ErrorCode:
        wanted = {tp: q for tp, q in queries.items() if tp not in found}
        metadata = cluster.metadata(sorted({t for t, _ in wanted}), auto_create=False)
        leaders: dict[TopicPartition, int] = {}
        for topic in metadata.topics:
            if topic.error_code:
                return ErrorCode(topic.error_code)
            leaders.update(((topic.name, p.partition_index), p.leader_id) for p in topic.partitions)
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        for tp, query in wanted.items():
            leader = leaders.get(tp, -1)
            if leader < 0:
                return E.LEADER_NOT_AVAILABLE if tp in leaders else E.UNKNOWN_TOPIC_OR_PARTITION
            by_leader.setdefault(leader, {})[tp] = query
        for leader, asked in by_leader.items():
            answer = cluster.node(leader).request(_request(asked), LIST_OFFSETS_VERSION)
            for topic_answer in answer.topics:
                for p in topic_answer.partitions:
                    if p.error_code:
                        return ErrorCode(p.error_code)
                    found[(topic_answer.name, p.partition_index)] = p.offset
        return E.NONE

    try:
        retrying(cluster, "ListOffsets", timeout_s, attempt)
    except RequestError as error:
        if error.error is E.TOPIC_AUTHORIZATION_FAILED:
            topics = sorted({t for t, _ in queries})
            raise RequestError(
                f"Not authorized to access topics: [{', '.join(topics)}]", error.error
            ) from None
        raise
    return found


def _request(queries: Mapping[TopicPartition, int]) -> ListOffsetsRequest:
    by_topic: dict[str, list[ListOffsetsPartition]] = {}
    for (topic, partition), query in sorted(queries.items()):
        by_topic.setdefault(topic, []).append(
            ListOffsetsPartition(partition_index=partition, timestamp=query)
        )
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[ListOffsetsTopic(name=name, partitions=partitions) for name, partitions in by_topic.items()],
    )
