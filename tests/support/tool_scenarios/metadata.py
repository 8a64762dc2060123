"""What a scenario waits for between two tools: every broker's Metadata agreeing on a topic, a leader,
an ISR. Asked of each broker with the raw client (both Kafka and odradek answer it), since a tool asks
whichever broker it likes and a broker may learn of a change a moment after the controller made it."""

from __future__ import annotations

from odradek.protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponsePartition,
)
from tests.support.raw_client import RawClient
from tests.support.tool_scenarios.session import Session, wait_for


def partitions(session: Session, topic: str, node: int) -> dict[int, MetadataResponsePartition]:
    """`topic`'s partitions as broker `node` describes them (none when it does not know the topic)."""
    host, port = session.target.addresses[node]
    try:
        with RawClient(port, timeout=5, host=host) as client:
            response: MetadataResponse = client.request(
                MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False),
                12,
            )
    except OSError:  # a broker starting or stopping: asked again
        return {}
    (described,) = response.topics
    if described.error_code != 0:
        return {}
    return {p.partition_index: p for p in described.partitions}


def wait_topic(session: Session, topic: str, count: int, nodes: list[int] | None = None) -> None:
    """Until every broker (or `nodes`) knows `count` partitions of `topic`, each with a leader."""

    def known() -> bool:
        for node in nodes or list(session.target.addresses):
            found = partitions(session, topic, node)
            if len(found) != count or any(p.leader_id < 0 for p in found.values()):
                return False
        return True

    wait_for(known, 60, f"{count} partitions of {topic} with leaders in every broker's metadata")


def wait_gone(session: Session, topic: str) -> None:
    """Until no broker knows `topic` any more."""
    wait_for(
        lambda: all(not partitions(session, topic, n) for n in session.target.addresses),
        60,
        f"{topic} gone from every broker's metadata",
    )


def wait_partition(
    session: Session,
    topic: str,
    partition: int,
    leader: int | None = None,
    isr: list[int] | None = None,
    nodes: list[int] | None = None,
) -> None:
    """Until every broker (or `nodes`) says `topic`-`partition` has this leader and this ISR (in any
    order)."""

    def agreed() -> bool:
        for node in nodes or list(session.target.addresses):
            found = partitions(session, topic, node).get(partition)
            if found is None:
                return False
            if leader is not None and found.leader_id != leader:
                return False
            if isr is not None and sorted(found.isr_nodes) != sorted(isr):
                return False
        return True

    wait_for(agreed, 60, f"{topic}-{partition} led by {leader} with ISR {isr}")
